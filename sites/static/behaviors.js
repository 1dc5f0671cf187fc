// The only client-side behaviours of the fixture sites (sites contract):
// 1. a button with aria-expanded + aria-controls toggles the `hidden` attribute of the
//    controlled element and flips aria-expanded (disclosures, kebab / actions menus);
// 2. a button with data-opens="ID" shows the dialog #ID; a button with data-closes hides
//    the dialog that encloses it.
// Everything else is plain HTML: links navigate, forms submit to the server.
(function () {
  "use strict";
  document.addEventListener("click", function (event) {
    var button = event.target instanceof Element ? event.target.closest("button") : null;
    if (!button) return;
    var controls = button.getAttribute("aria-controls");
    if (controls !== null && button.hasAttribute("aria-expanded")) {
      var panel = document.getElementById(controls);
      if (panel) {
        var open = button.getAttribute("aria-expanded") === "true";
        button.setAttribute("aria-expanded", open ? "false" : "true");
        if (open) panel.setAttribute("hidden", ""); else panel.removeAttribute("hidden");
      }
      event.preventDefault();
      return;
    }
    var opens = button.getAttribute("data-opens");
    if (opens !== null) {
      var dialog = document.getElementById(opens);
      if (dialog) {
        dialog.removeAttribute("hidden");
        var first = dialog.querySelector("input, select, textarea, button");
        if (first) first.focus();
      }
      event.preventDefault();
      return;
    }
    if (button.hasAttribute("data-closes")) {
      var enclosing = button.closest('[role="dialog"]');
      if (enclosing) enclosing.setAttribute("hidden", "");
      event.preventDefault();
    }
  });
})();
