/* Display equations fit the text column: once MathJax has typeset a page
 * (and again when the window changes size), each display equation wider than
 * its column is scaled down to it, to no less than 60 %; past that it keeps
 * that size and scrolls inside the column (see speclib_layout.css). */
(function () {
  "use strict";
  var SMALLEST = 0.6;
  function fit() {
    document.querySelectorAll('mjx-container[display="true"]').forEach(function (eq) {
      eq.style.fontSize = "";
      var room = eq.clientWidth, need = eq.scrollWidth;
      if (room > 0 && need > room + 1) {
        eq.style.fontSize = (100 * Math.max(SMALLEST, room / need)).toFixed(1) + "%";
      }
    });
  }
  var tries = 0;
  function whenTypeset() {  // MathJax loads after this script: wait for its first typesetting
    var mj = window.MathJax;
    if (mj && mj.startup && mj.startup.promise) { mj.startup.promise.then(fit); }
    else if (++tries < 100) { setTimeout(whenTypeset, 100); }
  }
  var timer = null;
  window.addEventListener("resize", function () { clearTimeout(timer); timer = setTimeout(fit, 100); });
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", whenTypeset); }
  else { whenTypeset(); }
})();
