// The fixed words of the results panel, in the page's language. Functions rather than tables made once:
// the catalog is set when the page starts, after these modules are loaded.

import { tr } from "./i18n.js";

export function stageLabels() {
  return {
    queued: tr("Waiting in the queue"),
    started: tr("A grading worker picked it up"),
    static: tr("Reading your code"),
    baseline: tr("Running the FP32 baseline"),
    starting: tr("Starting your code"),
    steps: tr("Training and comparing with FP32"),
    trusted: tr("Finishing the FP32 baseline and the reference run"),
    float16: tr("Running your float16 code on the CPU"),
    timing: tr("Timing against the baseline"),
    timing_given: tr("Timing against the given step"),
    retry: tr("The grading worker stopped; grading again"),
    check: tr("Checks"),
  };
}

function builtInCheckNames() {
  return {
    call_order: tr("Call order"),
    parity: tr("Parity with FP32"),
    coverage: tr("16-bit coverage"),
    overflow: tr("Overflow handling"),
    speedup: tr("Speedup"),
    memory: tr("Peak memory"),
    ranks: tr("Ranks agree"),
    bottleneck: tr("What your profile found"),
    host_syncs: tr("Host syncs"),
    matmul_dtypes: tr("Matmul dtypes"),
    transfers: tr("Host-device copies"),
    step_time: tr("Faster than the given step"),
  };
}

// A lesson's own checks are titled by the lesson (the page data's check_titles); the built-in ones here.
export function checkName(id, lessonTitles) {
  return builtInCheckNames()[id] || (lessonTitles || {})[id] || id;
}

// Human headings for the error kinds of docs/results.md (the kind itself stays in the JSON for tools).
export function errorKindLabels() {
  return {
    syntax: tr("Your code has a syntax error and did not run"),
    import: tr("Your code failed while it was being imported"),
    entrypoint: tr("The function to grade is missing"),
    signature: tr("The function has the wrong parameters"),
    exception: tr("Your code raised an exception"),
    return: tr("The function did not return the loss"),
    nonfinite: tr("The loss became NaN or infinite"),
    oom: tr("Your code used more memory than allowed"),
    exit: tr("Your code ended the process"),
    timeout: tr("Your code ran for too long"),
    crash: tr("The process running your code crashed"),
    tampering: tr("Your code replaced the grader's instruments"),
    protocol: tr("Your code disturbed the grader's channel"),
    internal: tr("The grader could not prepare the run"),
    lesson: tr("The lesson's own code failed: the grader could not grade this"),
    platform: tr("Grading problem"),
  };
}

export function verdictLabels() {
  return {
    pass: tr("Passed"), fail: tr("Failed"), error: tr("Error"), not_applicable: tr("Not applicable"),
    held: tr("Held until the exam closes"),  // an exam holds the verdict back (webapp/exams.py)
  };
}
