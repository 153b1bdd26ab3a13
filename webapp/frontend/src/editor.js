import { EditorState, Prec } from "@codemirror/state";
import {
  Decoration,
  EditorView,
  ViewPlugin,
  WidgetType,
  keymap,
  lineNumbers,
  highlightActiveLine,
  highlightActiveLineGutter,
  highlightSpecialChars,
  drawSelection,
  dropCursor,
  rectangularSelection,
  crosshairCursor,
} from "@codemirror/view";
import { defaultKeymap, history, historyKeymap, indentWithTab } from "@codemirror/commands";
import {
  indentUnit,
  indentOnInput,
  bracketMatching,
  foldGutter,
  foldKeymap,
  syntaxHighlighting,
  defaultHighlightStyle,
} from "@codemirror/language";
import { python } from "@codemirror/lang-python";
import {
  autocompletion,
  completionKeymap,
  closeBrackets,
  closeBracketsKeymap,
} from "@codemirror/autocomplete";
import { searchKeymap, highlightSelectionMatches } from "@codemirror/search";
import { diagnosticCount, lintGutter, lintKeymap, setDiagnostics, setDiagnosticsEffect } from "@codemirror/lint";
import { lightTheme } from "./theme.js";
import { lineDiagnostics } from "./line-marks.js";

function noop() {}

// Exceptions from page callbacks must not break CodeMirror's update cycle.
function guarded(fn, label) {
  return (...args) => {
    try {
      return fn(...args);
    } catch (err) {
      console.error(`AmpDojo editor: ${label} threw`, err);
      return undefined;
    }
  };
}

function runKeymap(onRun) {
  // Highest precedence so that Mod-Enter runs the code even while the
  // completion popup or another binding would otherwise claim Enter.
  return Prec.highest(
    keymap.of([
      {
        key: "Mod-Enter",
        preventDefault: true,
        run: () => {
          onRun();
          return true;
        },
      },
    ]),
  );
}

function changeListener(onChange) {
  return EditorView.updateListener.of((update) => {
    if (update.docChanged) onChange(update.state.doc.toString());
  });
}

// The grader's findings name lines of the code as it was graded: once that code is edited they may name the wrong
// line, so any edit takes every mark away (the next verdict brings its own).
const marksClearOnEdit = EditorState.transactionExtender.of((tr) =>
  tr.docChanged && diagnosticCount(tr.startState) > 0 ? { effects: setDiagnosticsEffect.of([]) } : null,
);

// ---- soft wrapping that keeps Python readable ----
// A wrapped line's continuation rows hang under the line's own text, one indent deeper (text-indent pulls the
// first row back), so a wrap never looks like a dedent. Rows break at spaces and, inside a run with no space
// (`torch.autocast(device_type=device_type,`), only after a comma, bracket, dot or `=`: a <wbr> there, so an
// identifier is never cut in two.
const HANG_COLUMNS = 4;
const BREAK_AFTER = /[,([{.=](?=[^\s,)\]}:.=])/g;

class BreakOpportunity extends WidgetType {
  eq() {
    return true;
  }
  toDOM() {
    return document.createElement("wbr");
  }
  ignoreEvent() {
    return false;
  }
}
const breakOpportunity = Decoration.widget({ widget: new BreakOpportunity(), side: 1 });
const hangs = new Map();

function hang(columns) {
  if (!hangs.has(columns)) {
    const style = `padding-left: calc(${columns}ch + 6px); text-indent: -${columns}ch`;
    hangs.set(columns, Decoration.line({ attributes: { style } }));
  }
  return hangs.get(columns);
}

function leadingColumns(text, tabSize) {
  let columns = 0;
  for (const ch of text) {
    if (ch === " ") columns += 1;
    else if (ch === "\t") columns += tabSize - (columns % tabSize);
    else break;
  }
  return columns;
}

function wrapDecorations(view) {
  const ranges = [];
  const tabSize = view.state.tabSize;
  for (const { from, to } of view.visibleRanges) {
    for (let pos = from; pos <= to; ) {
      const line = view.state.doc.lineAt(pos);
      ranges.push(hang(leadingColumns(line.text, tabSize) + HANG_COLUMNS).range(line.from));
      for (const m of line.text.matchAll(BREAK_AFTER)) {
        ranges.push(breakOpportunity.range(line.from + m.index + 1));
      }
      pos = line.to + 1;
    }
  }
  return Decoration.set(ranges, true);
}

const pythonWrapping = [
  EditorView.lineWrapping,
  EditorView.theme({ "&.cm-lineWrapping, & .cm-lineWrapping": { wordBreak: "normal", overflowWrap: "anywhere" } }),
  ViewPlugin.fromClass(
    class {
      constructor(view) {
        this.decorations = wrapDecorations(view);
      }
      update(update) {
        if (update.docChanged || update.viewportChanged) this.decorations = wrapDecorations(update.view);
      }
    },
    { decorations: (plugin) => plugin.decorations },
  ),
];

function baseExtensions() {
  return [
    lineNumbers(),
    highlightActiveLineGutter(),
    highlightSpecialChars(),
    history(),
    foldGutter(),
    drawSelection(),
    dropCursor(),
    EditorState.allowMultipleSelections.of(true),
    indentUnit.of("    "),
    EditorState.tabSize.of(4),
    indentOnInput(),
    syntaxHighlighting(defaultHighlightStyle, { fallback: true }),
    bracketMatching(),
    closeBrackets(),
    autocompletion(),
    rectangularSelection(),
    crosshairCursor(),
    highlightActiveLine(),
    highlightSelectionMatches(),
    python(),
    lintGutter(),
    marksClearOnEdit,
    keymap.of([
      ...lintKeymap,
      ...closeBracketsKeymap,
      ...defaultKeymap,
      ...searchKeymap,
      ...historyKeymap,
      ...foldKeymap,
      ...completionKeymap,
      indentWithTab,
    ]),
    lightTheme,
  ];
}

/**
 * Creates a Python code editor inside `parent`.
 *
 * setValue() replaces the whole document as one undoable change and, like
 * typing, reports the new text through onChange.
 */
export function createEditor(parent, options = {}) {
  if (!parent || typeof parent.appendChild !== "function") {
    throw new TypeError("AmpDojo.createEditor: parent must be a DOM element");
  }
  const doc = options.doc == null ? "" : String(options.doc);
  const onRun = guarded(typeof options.onRun === "function" ? options.onRun : noop, "onRun");
  const onChange = guarded(
    typeof options.onChange === "function" ? options.onChange : noop,
    "onChange",
  );
  const readOnly = Boolean(options.readOnly);
  const renderMark = typeof options.renderMark === "function" ? options.renderMark : undefined;

  const state = EditorState.create({
    doc,
    extensions: [
      runKeymap(onRun),
      baseExtensions(),
      changeListener(onChange),
      EditorState.readOnly.of(readOnly),
      // CodeMirror's own words (the diagnostics panel's label, "No diagnostics"), in the page's language.
      EditorState.phrases.of(options.phrases || {}),
      // Long lines (a training step's signature takes up to 110 characters) wrap instead of hiding past the
      // editor's right edge: the learner sees the whole line at any width, line numbers stay those of the file.
      pythonWrapping,
      EditorView.editorAttributes.of({ "data-testid": "editor" }),
      EditorView.contentAttributes.of({
        "aria-label": "Code editor",
        "aria-multiline": "true",
        ...(readOnly ? { "aria-readonly": "true" } : {}),
      }),
    ],
  });
  const view = new EditorView({ state, parent });

  return {
    getValue() {
      return view.state.doc.toString();
    },
    setValue(text) {
      const insert = text == null ? "" : String(text);
      view.dispatch({
        changes: { from: 0, to: view.state.doc.length, insert },
        selection: { anchor: 0 },
        scrollIntoView: true,
      });
    },
    focus() {
      view.focus();
    },
    // Puts the cursor at the start of line n (1-based; clamped to the document) and shows it: the tutor's
    // "line 7" links here.
    goToLine(n) {
      const doc = view.state.doc;
      const line = doc.line(Math.min(Math.max(1, Number(n) || 1), doc.lines));
      view.dispatch({ selection: { anchor: line.from }, scrollIntoView: true });
      view.focus();
    },
    // Marks lines in the gutter (and underlines them) with a message shown on hover and in the diagnostics panel
    // (F8 moves to the next one, Ctrl/Cmd+Shift+M opens the panel); [] takes them all away.
    markLines(marks) {
      view.dispatch(setDiagnostics(view.state, lineDiagnostics(view.state.doc, marks, renderMark)));
    },
    view,
  };
}
