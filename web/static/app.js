// The Scion Hub page's one script: live updates from the Hub's
// server-sent events (/ui/events), an agent's logs streamed from
// /ui/agents/{id}/logs, and the OIDC device sign-in. Every value goes in
// through textContent, never as HTML.
(function () {
  "use strict";
  var body = document.body;
  var page = body.getAttribute("data-page");

  function dash(s) { return s === undefined || s === null || s === "" ? "-" : String(s); }
  function ports(ps) {
    if (!ps || !ps.length) return "-";
    return ps.map(function (p) {
      return p.hostPort + "->" + p.containerPort + "/" + (p.protocol || "tcp");
    }).join(", ");
  }
  function target(t) {
    if (!t || !t.type) return "-";
    return t.type === "kubernetes" ? "kubernetes:" + (t.context || "") + "/" + (t.namespace || "") : t.type;
  }
  function pin(p) { return target(p); } // the pin's runtime target is inline
  function age(iso) {
    var s = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
    if (s < 60) return s + "s";
    if (s < 3600) return Math.round(s / 60) + "m";
    return Math.round(s / 3600) + "h";
  }
  function cell(tr, text, cls) {
    var td = document.createElement("td");
    td.textContent = text;
    if (cls) td.className = cls;
    tr.appendChild(td);
    return td;
  }
  function projectName(id) {
    var row = document.querySelector('#projects tr[data-id="' + CSS.escape(id) + '"]');
    return row ? row.getAttribute("data-name") : "";
  }

  function agentRow(a) {
    var tr = document.createElement("tr");
    tr.setAttribute("data-id", a.id);
    tr.setAttribute("data-project", a.projectId);
    var td = document.createElement("td");
    var link = document.createElement("a");
    link.href = "/ui/agents/" + encodeURIComponent(a.id);
    link.textContent = a.slug;
    td.appendChild(link);
    tr.appendChild(td);
    cell(tr, dash(projectName(a.projectId)));
    cell(tr, dash(a.phase), "phase-" + a.phase);
    cell(tr, dash(a.runtimeBrokerName));
    cell(tr, pin(a.pinnedRuntimeTarget));
    cell(tr, String(a.generation || 0));
    cell(tr, dash(a.statusMessage));
    cell(tr, ports(a.ports));
    cell(tr, age(a.createdAt));
    return tr;
  }
  function showEmpty() {
    var none = document.getElementById("no-agents");
    var tbody = document.querySelector("#agents tbody");
    if (none && tbody) none.hidden = tbody.children.length > 0;
  }
  function upsertAgent(a) {
    var tbody = document.querySelector("#agents tbody");
    if (!tbody) return;
    var old = tbody.querySelector('tr[data-id="' + CSS.escape(a.id) + '"]');
    var tr = agentRow(a);
    if (old) tbody.replaceChild(tr, old); else tbody.appendChild(tr);
    showEmpty();
  }
  function removeAgent(id) {
    var old = document.querySelector('#agents tr[data-id="' + CSS.escape(id) + '"]');
    if (old) old.remove();
    showEmpty();
  }
  function brokerRow(b) {
    var tr = document.createElement("tr");
    tr.setAttribute("data-id", b.id);
    cell(tr, b.name);
    cell(tr, b.status, "status-" + b.status);
    cell(tr, b.runningAgents + " / " + (b.effectiveMaxAgents > 0 ? b.effectiveMaxAgents : "∞"));
    cell(tr, dash(b.runtime));
    cell(tr, target(b.runtimeTarget));
    cell(tr, (b.profiles || []).map(function (p) { return p.name; }).join(", ") || "-");
    cell(tr, (b.projects || []).map(function (id) { return projectName(id) || "-"; }).join(", "));
    return tr;
  }
  function replaceRows(sel, items, row) {
    var tbody = document.querySelector(sel + " tbody");
    if (!tbody) return;
    while (tbody.firstChild) tbody.removeChild(tbody.firstChild);
    items.forEach(function (x) { tbody.appendChild(row(x)); });
  }
  function projectRow(p) {
    var tr = document.createElement("tr");
    tr.setAttribute("data-id", p.id);
    tr.setAttribute("data-name", p.name);
    cell(tr, p.name);
    cell(tr, p.sharingMode);
    cell(tr, dash(p.defaultRuntimeBrokerId));
    cell(tr, dash(p.activeProfile));
    cell(tr, String((p.providers || []).length));
    return tr;
  }
  function updateAgentPage(a) {
    var fields = {
      phase: dash(a.phase), containerStatus: dash(a.containerStatus), brokerName: dash(a.runtimeBrokerName),
      pin: pin(a.pinnedRuntimeTarget), generation: String(a.generation || 0), statusMessage: dash(a.statusMessage), ports: ports(a.ports)
    };
    Object.keys(fields).forEach(function (k) {
      var dd = document.querySelector('#agent [data-field="' + k + '"]');
      if (dd) dd.textContent = fields[k];
      if (dd && k === "phase") dd.className = "phase-" + a.phase;
    });
  }

  function live() {
    var state = document.getElementById("live");
    if (!state || !window.EventSource) return;
    var es = new EventSource("/ui/events");
    var agentID = body.getAttribute("data-agent");
    es.addEventListener("hello", function () { state.textContent = "live"; state.className = "live on"; });
    es.addEventListener("agent", function (e) {
      var a = JSON.parse(e.data);
      if (page === "overview") upsertAgent(a);
      else if (a.id === agentID) updateAgentPage(a);
    });
    es.addEventListener("agent-gone", function (e) {
      var g = JSON.parse(e.data);
      if (page === "overview") removeAgent(g.id);
      else if (g.id === agentID) updateAgentPage({ phase: "deleted", id: g.id });
    });
    es.addEventListener("agents", function (e) {
      if (page === "overview") { replaceRows("#agents", JSON.parse(e.data), agentRow); showEmpty(); }
    });
    es.addEventListener("brokers", function (e) { replaceRows("#brokers", JSON.parse(e.data), brokerRow); });
    es.addEventListener("projects", function (e) { replaceRows("#projects", JSON.parse(e.data), projectRow); });
    es.addEventListener("resync", function () { location.reload(); });
    es.onerror = function () { state.textContent = "reconnecting…"; state.className = "live"; };
  }

  function logs() {
    var pre = document.getElementById("logs");
    var st = document.getElementById("logs-state");
    var id = body.getAttribute("data-agent");
    if (!pre || !id || !window.fetch) return;
    var dec = new TextDecoder();
    function append(text) {
      var atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
      pre.appendChild(document.createTextNode(text));
      if (atEnd) pre.scrollTop = pre.scrollHeight;
    }
    fetch("/ui/agents/" + encodeURIComponent(id) + "/logs?follow=true&tail=500", { credentials: "same-origin" })
      .then(function (resp) {
        if (!resp.ok) {
          return resp.json().then(function (e) { st.textContent = (e.error && e.error.message) || resp.statusText; });
        }
        st.textContent = "streaming"; st.className = "live on";
        var rd = resp.body.getReader();
        function pump() {
          return rd.read().then(function (r) {
            if (r.done) { st.textContent = "ended"; st.className = "live"; return; }
            append(dec.decode(r.value, { stream: true }));
            return pump();
          });
        }
        return pump();
      })
      .catch(function () { st.textContent = "disconnected"; st.className = "live"; });
  }

  // OIDC sign-in in the browser: the Hub's device flow (RFC 8628, the
  // one 'scion hub auth login' runs), then the token it gives is handed
  // to /ui/login, which keeps it in an HttpOnly cookie.
  function oidc() {
    var btn = document.getElementById("oidc-start");
    if (!btn) return;
    function post(url, v) {
      return fetch(url, { method: "POST", credentials: "same-origin", headers: { "Content-Type": "application/json" }, body: JSON.stringify(v || {}) });
    }
    btn.addEventListener("click", function () {
      btn.disabled = true;
      post("/api/v1/auth/device").then(function (r) { return r.json(); }).then(function (d) {
        if (!d.deviceCode) { btn.disabled = false; return; }
        var link = document.getElementById("device-link");
        link.href = d.verificationUriComplete || d.verificationUri;
        link.textContent = d.verificationUri;
        document.getElementById("device-code").textContent = d.userCode;
        document.getElementById("device").hidden = false;
        var wait = Math.max(1, d.interval || 5) * 1000;
        (function poll() {
          setTimeout(function () {
            post("/api/v1/auth/device/token", { deviceCode: d.deviceCode }).then(function (r) {
              return r.json().then(function (v) { return { status: r.status, v: v }; });
            }).then(function (x) {
              if (x.status === 200 && x.v.token) {
                var f = new URLSearchParams();
                f.append("token", x.v.token);
                fetch("/ui/login", { method: "POST", body: f, credentials: "same-origin" }).then(function () { location.href = "/ui/"; });
                return;
              }
              var code = x.v.error && x.v.error.code;
              if (code === "authorization_pending") { poll(); return; }
              if (code === "slow_down") { wait += 5000; poll(); return; }
              btn.disabled = false;
              document.getElementById("device").hidden = true;
            });
          }, wait);
        })();
      });
    });
  }

  if (page === "overview" || page === "agent") live();
  if (page === "agent") logs();
  oidc();
})();
