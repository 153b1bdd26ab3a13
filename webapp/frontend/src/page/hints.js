// The lesson's hints, unfolded one at a time by the hint button.

import { tr } from "./i18n.js";

// The button after `shown` of `total` hints are shown.
export function hintButton(shown, total) {
  return {
    text: shown < total ? tr("Show another hint ({shown} of {total})", { shown, total }) : tr("All hints shown"),
    disabled: shown >= total,
  };
}

export function bindHints(doc) {
  const button = doc.querySelector('[data-testid="hint-button"]');
  if (!button) return;
  const hints = Array.from(doc.querySelectorAll(".hint"));
  let shown = 0;
  button.addEventListener("click", () => {
    const hint = shown < hints.length ? hints[shown++] : null;
    if (hint) hint.hidden = false;
    const next = hintButton(shown, hints.length);
    button.textContent = next.text;
    button.disabled = next.disabled;
    if (button.disabled && hint) {
      // a disabled button loses focus: give it to the hint just shown
      hint.tabIndex = -1;
      hint.focus();
    }
  });
}
