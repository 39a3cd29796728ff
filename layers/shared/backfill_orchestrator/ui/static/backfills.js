// The Backfills page's script: follow the backfill while it runs (polls its JSON every few
// seconds and recolours the graph and the grids), and the action buttons (a press POSTs with the
// page's CSRF token, then polls the trigger's answer). No library, nothing fetched elsewhere.
(function () {
  "use strict";
  var dataBlock = document.getElementById("page-data");
  if (!dataBlock) { return; }
  var page = JSON.parse(dataBlock.textContent);
  var csrf = (document.querySelector('meta[name="csrf-token"]') || {}).content || "";
  var POLL_MS = 3000, CONTROL_POLL_MS = 1500, CONTROL_TIMEOUT_MS = 300000;
  var pending = null;  // the action being confirmed

  function text(id, value) {
    var node = document.getElementById(id);
    if (node) { node.textContent = value == null ? "" : String(value); }
    return node;
  }

  function rows(tbodyParent, cells) {
    var body = document.querySelector("#" + tbodyParent + " tbody");
    if (!body) { return; }
    while (body.firstChild) { body.removeChild(body.firstChild); }
    cells.forEach(function (values) {
      var tr = document.createElement("tr");
      values.forEach(function (value, index) {
        var cell = document.createElement(index === 0 && tbodyParent === "figures" ? "th" : "td");
        cell.textContent = value == null ? "" : String(value);
        tr.appendChild(cell);
      });
      body.appendChild(tr);
    });
  }

  function show(view) {
    var state = text("state", view.state);
    if (state) { state.setAttribute("data-backfill-state", view.state); }
    text("progress", view.progress);
    var reason = text("reason", view.reason || "");
    if (reason) { reason.hidden = !view.reason; }
    Object.keys(view.steps || {}).forEach(function (stepId) {
      var selector = '[data-step="' + CSS.escape(stepId) + '"]';
      document.querySelectorAll("g.step" + selector).forEach(function (node) {
        node.setAttribute("data-state", view.steps[stepId]);
      });
      document.querySelectorAll("details.step-grid" + selector + " .step-state").forEach(function (node) {
        node.setAttribute("data-step-state", view.steps[stepId]);
        node.textContent = view.steps[stepId];
      });
    });
    (view.grids || []).forEach(function (grid) {
      var svg = document.querySelector('svg.partition-grid[data-index="' + grid.index + '"]');
      if (!svg) { return; }
      svg.querySelectorAll("rect[data-i]").forEach(function (rect) {
        var code = grid.codes.charAt(Number(rect.getAttribute("data-i")));
        if (code && page.codes[code]) { rect.setAttribute("data-state", page.codes[code]); }
      });
    });
    var allowed = (view.actions || []).map(function (a) { return a.action; });
    document.querySelectorAll("button[data-action]").forEach(function (button) {
      button.hidden = allowed.indexOf(button.getAttribute("data-action")) < 0;
    });
    var section = document.getElementById("actions");
    if (section && section.getAttribute("data-actions-enabled") === "true") {
      section.hidden = allowed.length === 0 && document.getElementById("outcome").hidden &&
        document.getElementById("confirm").hidden;
    }
    rows("figures", (view.figures || []).map(function (r) { return [r.what, r.estimate, r.actual]; }));
    rows("timeline", (view.timeline || []).map(function (e) { return [e.at, e.state, e.detail, e.by]; }));
    page.view = view;
  }

  function poll() {
    fetch(page.api, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (view) { if (view) { show(view); } })
      .catch(function () { /* the next poll tries again */ })
      .then(function () { if (page.view.live || pending) { window.setTimeout(poll, POLL_MS); } });
  }

  function outcome(kind, message) {
    var node = text("outcome", message);
    node.hidden = false;
    document.getElementById("actions").hidden = false;
    node.setAttribute("data-outcome", kind);
  }

  function follow(control, started) {
    fetch(page.api + "/controls/" + encodeURIComponent(control), { credentials: "same-origin" })
      .then(function (response) { return response.json(); })
      .then(function (answer) {
        if (answer.outcome === "pending") {
          if (Date.now() - started > CONTROL_TIMEOUT_MS) {
            outcome("pending", "The orchestrator has not answered yet; this page keeps showing the backfill.");
            return;
          }
          window.setTimeout(function () { follow(control, started); }, CONTROL_POLL_MS);
          return;
        }
        outcome(answer.outcome, (answer.outcome === "done" ? "Done: " : "Refused: ") + (answer.reason || answer.outcome));
        pending = null;
        poll();
      })
      .catch(function () { window.setTimeout(function () { follow(control, started); }, CONTROL_POLL_MS); });
  }

  function press(action, reason) {
    outcome("sending", "Sending…");
    fetch(page.api + "/actions/" + encodeURIComponent(action), {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf, Accept: "application/json" },
      body: JSON.stringify({ reason: reason })
    })
      .then(function (response) { return response.json(); })
      .then(function (answer) {
        if (answer.outcome === "requested") {
          outcome("requested", answer.reason + " (waiting for the orchestrator)");
          pending = answer.control;
          follow(answer.control, Date.now());
        } else {
          outcome("refused", "Refused" + (answer.rule ? " (" + answer.rule + ")" : "") + ": " + (answer.reason || answer.error));
        }
      })
      .catch(function (error) { outcome("error", "Could not send: " + error); });
  }

  var table = page.actions || {};
  document.querySelectorAll("button[data-action]").forEach(function (button) {
    button.addEventListener("click", function () {
      var name = button.getAttribute("data-action");
      var action = table[name] || { confirm: "Go on?", asks_reason: true };
      pending = null;
      text("confirm-text", action.confirm);
      document.getElementById("reason-label").hidden = !action.asks_reason;
      document.getElementById("confirm-reason").value = "";
      document.getElementById("confirm").hidden = false;
      document.getElementById("confirm").setAttribute("data-action", name);
      document.getElementById("confirm").setAttribute("data-asks-reason", action.asks_reason ? "true" : "false");
    });
  });
  var yes = document.getElementById("confirm-yes");
  if (yes) {
    yes.addEventListener("click", function () {
      var panel = document.getElementById("confirm");
      var reason = document.getElementById("confirm-reason").value.trim();
      if (panel.getAttribute("data-asks-reason") === "true" && !reason) {
        outcome("refused", "Say why first.");
        return;
      }
      panel.hidden = true;
      press(panel.getAttribute("data-action"), reason);
    });
    document.getElementById("confirm-no").addEventListener("click", function () {
      document.getElementById("confirm").hidden = true;
    });
  }
  if (page.view.live) { window.setTimeout(poll, POLL_MS); }
})();
