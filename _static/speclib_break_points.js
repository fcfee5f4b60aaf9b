/* A long dotted name in inline code (speclib.core.acceptance.load_survival_curve) or a URL has no
 * place where a line may end, so on a phone it would push the page wider than the screen or break
 * mid-word: a line may end after each ".", "_", "/" or "-" in it instead (a <wbr> there). */
(function () {
  "use strict";
  var AFTER = /([._\/-])(?=[^._\/-])/g;
  function split(el) {
    var walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT), nodes = [];
    for (var n = walker.nextNode(); n; n = walker.nextNode()) { if (n.textContent.length > 20) nodes.push(n); }
    nodes.forEach(function (n) {
      var parts = n.textContent.split(AFTER), frag = document.createDocumentFragment();
      for (var i = 0; i < parts.length; i++) {
        if (!parts[i]) continue;
        frag.appendChild(document.createTextNode(parts[i]));
        if (i % 2 === 1) frag.appendChild(document.createElement("wbr"));
      }
      n.parentNode.replaceChild(frag, n);
    });
  }
  function all() {
    document.querySelectorAll("article code.literal, article a.reference.external, article .citation, "
                              + "article dd, article .bibliography").forEach(split);
  }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", all); }
  else { all(); }
})();
