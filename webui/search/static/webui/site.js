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

// Completions for the search box: page titles from /api/complete fill its <datalist>.
// Without this file the box is a plain search field.
(function () {
  "use strict";
  var box = document.querySelector("input[name=q][data-complete]");
  var list = document.getElementById("completions");
  if (!box || !list || !window.fetch) return;
  var timer = null, asked = "", controller = null;
  function fill(words) {
    while (list.firstChild) list.removeChild(list.firstChild);
    words.forEach(function (text) {
      var option = document.createElement("option");
      option.value = text;
      list.appendChild(option);
    });
  }
  function ask() {
    var text = box.value;
    if (text === asked) return;
    asked = text;
    if (!text.trim() || text.length > 100) { fill([]); return; }
    if (controller) controller.abort();
    controller = window.AbortController ? new AbortController() : null;
    fetch(box.dataset.complete + "?q=" + encodeURIComponent(text),
          {signal: controller ? controller.signal : undefined, headers: {Accept: "application/json"}})
      .then(function (r) { return r.ok ? r.json() : {completions: []}; })
      .then(function (data) { if (box.value === text) fill(data.completions || []); })
      .catch(function () {});
  }
  box.addEventListener("input", function () {
    clearTimeout(timer);
    timer = setTimeout(ask, 120);
  });
})();
