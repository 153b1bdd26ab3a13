// A submission's permalink (webapp/templates/submissions/show.html): its stored result, or its grading
// followed live while it still waits or runs.

import { PanelState } from "./panel-state.js";
import { ResultsPanel } from "./results.js";
import { reattach } from "./stream.js";

export function initSubmission(page, env) {
  const state = new PanelState({ api: env.api, checkTitles: page.check_titles });
  new ResultsPanel(env.doc.getElementById("results"), state, env.win); // draws `state` from now on
  reattach(page.submission, state, { api: env.api, EventSource: env.EventSource, setTimeout: env.setTimeout });
}
