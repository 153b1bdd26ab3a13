import { EditorView } from "@codemirror/view";

// Heights are in line units: font-size 14px * line-height 1.5 = one line of
// 1.5em, so the editor shows at least 20 lines and scrolls beyond about 40.
const LINE = 1.5;
const MIN_LINES = 20;
const MAX_LINES = 40;
const MONO =
  'ui-monospace, SFMono-Regular, Menlo, Consolas, "DejaVu Sans Mono", "Liberation Mono", monospace';

export const lightTheme = EditorView.theme(
  {
    "&": {
      fontSize: "14px",
      color: "#1f2933",
      backgroundColor: "#ffffff",
      border: "1px solid #cbd2d9",
      borderRadius: "6px",
      maxHeight: `calc(${MAX_LINES * LINE}em + 10px)`,
    },
    "&.cm-focused": {
      outline: "2px solid #3b82f6",
      outlineOffset: "1px",
    },
    ".cm-scroller": {
      fontFamily: MONO,
      lineHeight: String(LINE),
      overflow: "auto",
    },
    ".cm-content, .cm-gutter": {
      minHeight: `${MIN_LINES * LINE}em`,
    },
    ".cm-content": {
      caretColor: "#1d4ed8",
      padding: "4px 0",
    },
    ".cm-cursor, .cm-dropCursor": {
      borderLeftColor: "#1d4ed8",
      borderLeftWidth: "2px",
    },
    "&.cm-focused > .cm-scroller > .cm-selectionLayer .cm-selectionBackground, .cm-selectionBackground, .cm-content ::selection":
      {
        backgroundColor: "#cfe3ff",
      },
    ".cm-gutters": {
      backgroundColor: "#f5f7fa",
      color: "#7b8794",
      borderRight: "1px solid #e4e7eb",
      borderTopLeftRadius: "6px",
      borderBottomLeftRadius: "6px",
    },
    ".cm-activeLine": {
      backgroundColor: "#f0f6ff",
    },
    ".cm-activeLineGutter": {
      backgroundColor: "#e3edfb",
      color: "#1f2933",
    },
    ".cm-foldGutter .cm-gutterElement": {
      cursor: "pointer",
      padding: "0 4px",
    },
    "&.cm-focused .cm-matchingBracket": {
      backgroundColor: "#d9f2e3",
      outline: "1px solid #7cc49b",
    },
    "&.cm-focused .cm-nonmatchingBracket": {
      backgroundColor: "#fde2e2",
    },
    ".cm-selectionMatch": {
      backgroundColor: "#fff3bf",
    },
    ".cm-searchMatch": {
      backgroundColor: "#ffe58f",
      outline: "1px solid #e0b400",
    },
    ".cm-panels": {
      backgroundColor: "#f5f7fa",
      color: "#1f2933",
    },
    ".cm-panels.cm-panels-top": {
      borderBottom: "1px solid #e4e7eb",
    },
    ".cm-tooltip": {
      border: "1px solid #cbd2d9",
      backgroundColor: "#ffffff",
      borderRadius: "4px",
    },
    ".cm-tooltip-autocomplete > ul > li[aria-selected]": {
      backgroundColor: "#dbeafe",
      color: "#1f2933",
    },
  },
  { dark: false },
);
