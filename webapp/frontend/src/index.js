// Entry point of the browser bundle. esbuild wraps it as an IIFE with
// --global-name=AmpDojo, so these three exports are all that `window.AmpDojo`
// holds (demo.html checks exactly this API). The bundle also runs the page
// logic (page/main.js) once the document is parsed: base.html loads this one
// script, with `defer`.

import { startPage } from "./page/main.js";

export { createEditor } from "./editor.js";
export { lineChart, barChart } from "./charts.js";

if (typeof window !== "undefined" && typeof document !== "undefined") {
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", () => startPage(window, document));
  } else {
    startPage(window, document);
  }
}
