// Keyboard shortcuts; every page works without this file.
// "/" focuses the search box, Esc leaves it, j/k move through the results.
(function () {
  "use strict";
  function typing(target) {
    var tag = target && target.tagName;
    return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || (target && target.isContentEditable);
  }
  var current = -1;
  function move(step) {
    var hits = document.querySelectorAll("li.hit");
    if (!hits.length) return;
    if (current >= 0 && hits[current]) hits[current].classList.remove("selected");
    current = Math.max(0, Math.min(hits.length - 1, current + step));
    var hit = hits[current];
    hit.classList.add("selected");
    var link = hit.querySelector("a.title");
    if (link) link.focus(); else hit.scrollIntoView({block: "nearest"});
  }
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    var box = document.querySelector("input[name=q]");
    if (event.key === "Escape" && event.target === box) { box.blur(); return; }
    if (typing(event.target)) return;
    if (event.key === "/" && box) {
      event.preventDefault();
      box.focus();
      box.select();
    } else if (event.key === "j") {
      move(1);
    } else if (event.key === "k") {
      move(-1);
    }
  });
})();
