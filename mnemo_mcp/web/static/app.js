// The dashboard works without this file; it only saves clicks.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  // Changing a filter applies it at once.
  document.querySelectorAll("select[data-autosubmit]").forEach(function (sel) {
    sel.addEventListener("change", function () { sel.form.submit(); });
  });
  // "/" jumps to the search box, as on most sites.
  document.addEventListener("keydown", function (ev) {
    var box = document.querySelector("input[name=q]");
    if (ev.key === "/" && box && document.activeElement !== box && !/INPUT|TEXTAREA|SELECT/.test(document.activeElement.tagName)) {
      ev.preventDefault();
      box.focus();
    }
  });
});
