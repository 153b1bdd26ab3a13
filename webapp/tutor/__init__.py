"""The tutor: a self-hosted chat model that explains a verdict from the grader's own evidence and asks a guiding
question, never handing over the solution (docs/tutor.md). `client` talks to any OpenAI-compatible endpoint,
`prompts` builds what the model sees (lesson text, code, result, opened hints: never a hidden field), `leak_guard`
checks each answer against the lesson's solutions before it is shown, `policy` says who may ask, `routes` serves it.

The package never imports the lesson loader or webapp.content (an import contract in pyproject.toml): the route
is handed the lesson's public text and, for the guard only, the solutions' text, by webapp.tutor_sources."""
