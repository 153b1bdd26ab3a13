"""The lesson format: a lesson's YAML file read, checked and turned into an
`Exercise` (schema, loader), its starter skeleton, hints and quiz. Nothing here
runs code."""
