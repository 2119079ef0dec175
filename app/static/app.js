// mysql-rollback web form: live job states, the range tabs, the server's time zone, confirmations.
// No framework, no build step.
"use strict";

const FINAL = ["succeeded", "failed", "cancelled"];

async function getJSON(url) {
  const response = await fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } });
  if (!response.ok) throw new Error(url + ": " + response.status);
  return response.json();
}

function setState(el, state) {
  el.textContent = state;
  el.className = "state state-" + state;
}

function liveJobList(table) {
  const known = new Set(Array.from(table.querySelectorAll("tbody tr")).map((tr) => tr.dataset.id));
  async function tick() {
    try {
      const list = await getJSON(table.dataset.live);
      for (const job of list.items) {
        if (!known.has(job.id)) { window.location.reload(); return; }
        const row = table.querySelector(`tr[data-id="${job.id}"]`);
        setState(row.querySelector('[data-field="state"]'), job.state);
        row.querySelector('[data-field="progress"]').value = job.progress.percent;
        row.querySelector('[data-field="percent"]').textContent = job.progress.percent + "%";
        row.querySelector('[data-field="rows"]').textContent = job.rows;
        const phase = row.querySelector('[data-field="phase"]');
        if (phase) phase.textContent = FINAL.includes(job.state) ? "" : job.progress.phase;
      }
    } catch (e) { /* the next tick tries again */ }
    setTimeout(tick, 1500);
  }
  setTimeout(tick, 1500);
}

function etaText(seconds) {
  if (seconds === null || seconds === undefined) return "time left: estimated once the range is read";
  if (seconds < 60) return "about " + Math.round(seconds) + " s left";
  return "about " + (seconds / 60).toFixed(1) + " min left";
}

function liveJob(badge) {
  if (badge.dataset.final === "yes") return;
  const phaseEl = document.getElementById("job-phase");
  const phases = phaseEl ? JSON.parse(phaseEl.dataset.phases) : {};
  async function tick() {
    try {
      const job = await getJSON(badge.dataset.live);
      setState(badge, job.state);
      document.getElementById("job-progress").value = job.progress.percent;
      document.getElementById("job-percent").textContent = job.progress.percent + "%";
      if (job.progress.total) document.getElementById("job-bytes").textContent = "of " + job.progress.total + " bytes";
      if (phaseEl) phaseEl.textContent = phases[job.progress.phase] || job.progress.phase;
      const eta = document.getElementById("job-eta");
      if (eta) eta.textContent = etaText(job.progress.eta_seconds);
      if (FINAL.includes(job.state)) { window.location.reload(); return; }
    } catch (e) { /* try again */ }
    setTimeout(tick, 1000);
  }
  setTimeout(tick, 1000);
}

const EXECUTION_FINAL = ["succeeded", "failed", "conflict", "cancelled", "interrupted", "refused"];

function liveExecutions(table) {
  const running = () => Array.from(table.querySelectorAll("tbody tr"))
    .some((tr) => !EXECUTION_FINAL.includes(tr.dataset.state));
  if (!running()) return;
  async function tick() {
    try {
      const list = await getJSON(table.dataset.live);
      for (const e of list) {
        const row = table.querySelector(`tr[data-id="${e.id}"]`);
        if (!row) continue;
        if (EXECUTION_FINAL.includes(e.state) && row.dataset.state !== e.state) { window.location.reload(); return; }
        row.dataset.state = e.state;
        setState(row.querySelector('[data-field="state"]'), e.state);
        row.querySelector('[data-field="progress"]').value = e.progress.percent;
        row.querySelector('[data-field="phase"]').textContent = e.progress.phase || "";
        row.querySelector('[data-field="done"]').textContent = e.progress.statements_done;
        row.querySelector('[data-field="total"]').textContent = e.progress.statements_total;
        const rate = row.querySelector('[data-field="rate"]');
        if (rate) rate.textContent = e.progress.rows_per_second
          ? `${Math.round(e.progress.rows_per_second).toLocaleString("en-US")} rows/s, about ${Math.round(e.progress.eta_seconds)} s left`
          : "";
      }
    } catch (e) { /* the next tick tries again */ }
    if (running()) setTimeout(tick, 1000);
  }
  setTimeout(tick, 1000);
}

function liveCheck(el) {
  // The conflict check runs in the background; the page shows its progress and reloads at its end.
  async function tick() {
    try {
      const e = await getJSON(el.dataset.live);
      if (EXECUTION_FINAL.includes(e.state)) { window.location.reload(); return; }
      setState(el.querySelector('[data-field="state"]'), e.state);
      el.querySelector('[data-field="progress"]').value = e.progress.percent;
      el.querySelector('[data-field="phase"]').textContent = e.progress.phase || "waiting for the target";
      el.querySelector('[data-field="done"]').textContent = e.progress.statements_done;
      el.querySelector('[data-field="total"]').textContent = e.progress.statements_total;
    } catch (e) { /* the next tick tries again */ }
    setTimeout(tick, 700);
  }
  setTimeout(tick, 700);
}

function confirmTarget(input) {
  // The commit button stays disabled until the target's name is typed exactly.
  const button = document.getElementById("confirm");
  const check = () => { button.disabled = input.value.trim() !== input.dataset.expect; };
  input.addEventListener("input", check);
  check();
}

function rangeTabs(form) {
  const show = () => {
    const kind = form.querySelector('input[name="range_kind"]:checked')?.value || "position";
    form.querySelectorAll(".range-kind").forEach((el) => { el.hidden = el.dataset.kind !== kind; });
  };
  form.querySelectorAll('input[name="range_kind"]').forEach((r) => r.addEventListener("change", show));
  show();
}

function serverTimeZone(select) {
  const out = document.getElementById(select.dataset.timezoneTarget);
  if (!out) return;
  const ask = async () => {
    if (!select.value) { out.textContent = "–"; return; }
    out.textContent = out.dataset.loading;
    try {
      const tz = await getJSON(`/api/servers/${encodeURIComponent(select.value)}/time-zone`);
      out.textContent = tz.error ? "unknown (" + tz.error + ")" : `${tz.time_zone} (UTC${tz.utc_offset})`;
    } catch (e) { out.textContent = "unknown"; }
  };
  select.addEventListener("change", ask);
  ask();
}

// Precise selection: the job page's transaction tick boxes (_picks_preview.html).
function pickTransactions(form) {
  const boxes = Array.from(form.querySelectorAll('input[name="tx"]'));
  const count = document.getElementById("picks-count");
  const button = document.getElementById("picks-regenerate");
  const update = () => {
    const ticked = boxes.filter((b) => b.checked).length;
    count.textContent = `${ticked} of ${boxes.length} ticked.`;
    button.disabled = ticked === 0;
  };
  const all = (checked) => () => { boxes.forEach((b) => { b.checked = checked; }); update(); };
  document.getElementById("picks-all").addEventListener("click", all(true));
  document.getElementById("picks-none").addEventListener("click", all(false));
  boxes.forEach((b) => b.addEventListener("change", update));
  update();
}

document.addEventListener("DOMContentLoaded", () => {
  const table = document.getElementById("jobs");
  if (table && table.dataset.live) liveJobList(table);
  const badge = document.getElementById("job-state");
  if (badge) liveJob(badge);
  const executions = document.getElementById("execution-list");
  if (executions && executions.dataset.live) liveExecutions(executions);
  const check = document.getElementById("check-running");
  if (check && check.dataset.live) liveCheck(check);
  const typed = document.getElementById("confirm-target");
  if (typed) confirmTarget(typed);
  const form = document.getElementById("job-form");
  if (form) rangeTabs(form);
  const picks = document.getElementById("picks-form");
  if (picks) pickTransactions(picks);
  const server = document.querySelector("select[data-timezone-target]");
  if (server) serverTimeZone(server);
  document.querySelectorAll("form[data-confirm]").forEach((f) =>
    f.addEventListener("submit", (event) => { if (!window.confirm(f.dataset.confirm)) event.preventDefault(); }));
});
