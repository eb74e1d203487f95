// vramdoc: a copy button on each code block. The page works without it; the button only
// appears when the script runs. Labels come from <body data-copy data-copied> (localized).
(function () {
  "use strict";
  var body = document.body;
  var copyLabel = body.getAttribute("data-copy") || "Copy";
  var copiedLabel = body.getAttribute("data-copied") || "Copied";
  function copy(text) {
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text);
    }
    // file:// and plain http: the clipboard API is unavailable; fall back to a selection.
    return new Promise(function (resolve, reject) {
      var area = document.createElement("textarea");
      area.value = text;
      area.setAttribute("readonly", "");
      area.style.position = "fixed";
      area.style.opacity = "0";
      body.appendChild(area);
      area.select();
      var ok = false;
      try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
      body.removeChild(area);
      if (ok) { resolve(); } else { reject(new Error("copy failed")); }
    });
  }
  var blocks = document.querySelectorAll("pre");
  for (var i = 0; i < blocks.length; i++) {
    (function (pre) {
      var button = document.createElement("button");
      button.type = "button";
      button.className = "copy-code";
      button.textContent = copyLabel;
      button.addEventListener("click", function () {
        var code = pre.querySelector("code") || pre;
        copy(code.innerText).then(function () {
          button.textContent = copiedLabel;
          setTimeout(function () { button.textContent = copyLabel; }, 1500);
        }, function () {});
      });
      var wrap = document.createElement("div");
      wrap.className = "code-wrap";
      pre.parentNode.insertBefore(wrap, pre);
      wrap.appendChild(pre);
      wrap.appendChild(button);
    })(blocks[i]);
  }
})();
