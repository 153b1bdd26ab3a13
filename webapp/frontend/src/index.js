// Entry point of the browser bundle. esbuild wraps it as an IIFE with
// --global-name=AmpDojo, so these three exports are all that `window.AmpDojo`
// holds; the Flask templates rely on exactly this API.

export { createEditor } from "./editor.js";
export { lineChart, barChart } from "./charts.js";
