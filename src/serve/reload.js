// vramdoc serve: live reload. Listens for build versions on /__vramdoc/events (server-sent
// events); reloads the page after each good build and shows a failed build's errors in an
// overlay until the next good build.
(function () {
  "use strict";
  var script = document.currentScript;
  var loaded = Number(script && script.getAttribute("data-version"));
  var overlay = null;

  function escapeHtml(text) {
    return String(text)
      .replace(/&/g, "&amp;")
      .replace(/</g, "&lt;")
      .replace(/>/g, "&gt;")
      .replace(/"/g, "&quot;")
      .replace(/'/g, "&#39;");
  }

  function hide() {
    if (overlay) {
      overlay.parentNode.removeChild(overlay);
      overlay = null;
    }
  }

  function show(errors) {
    if (!overlay) {
      overlay = document.createElement("div");
      overlay.id = "vramdoc-error-overlay";
      overlay.setAttribute("role", "alert");
      overlay.style.cssText =
        "position:fixed;left:0;right:0;bottom:0;max-height:70vh;overflow:auto;" +
        "z-index:2147483647;margin:0;padding:1em 1.5em;box-sizing:border-box;" +
        "background:#1e1e1e;color:#f3f3f3;border-top:4px solid #e5484d;" +
        "font:13px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;";
      document.body.appendChild(overlay);
    }
    var html =
      '<strong style="color:#ff8589">vramdoc: the build failed; showing the previous output.' +
      "</strong>";
    for (var i = 0; i < errors.length; i++) {
      html +=
        '<pre style="white-space:pre-wrap;margin:.8em 0 0">' +
        escapeHtml(errors[i].text) +
        "</pre>";
    }
    overlay.innerHTML = html;
  }

  function apply(status) {
    if (!status.ok) {
      show(status.errors || []);
    } else if (status.version !== loaded) {
      location.reload();
    } else {
      hide();
    }
  }

  if (window.EventSource) {
    var events = new EventSource("/__vramdoc/events");
    events.onmessage = function (e) {
      try {
        apply(JSON.parse(e.data));
      } catch (err) {
        /* a malformed event: wait for the next one */
      }
    };
  } else {
    setInterval(function () {
      fetch("/__vramdoc/status", { cache: "no-store" })
        .then(function (r) { return r.json(); })
        .then(apply, function () {});
    }, 1000);
  }
})();
