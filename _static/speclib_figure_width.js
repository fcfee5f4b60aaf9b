/* A static figure keeps its text legible on a narrow screen: each figure image
 * tells its stylesheet its natural width (--speclib-natural-width, in image
 * pixels), below a fraction of which speclib_layout.css does not shrink it; a
 * figure wider than the column then scrolls sideways inside its own box. */
(function () {
  "use strict";
  function mark(img) {
    if (img.naturalWidth > 0) { img.style.setProperty("--speclib-natural-width", String(img.naturalWidth)); }
  }
  function all() {
    document.querySelectorAll(".cell_output > img").forEach(function (img) {
      if (img.complete) { mark(img); } else { img.addEventListener("load", function () { mark(img); }); }
    });
  }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", all); }
  else { all(); }
})();
