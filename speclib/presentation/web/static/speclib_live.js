/* Live figures for the HTML book: no kernel, no server, no plotting library.
 *
 * speclib_model.js (generated from speclib's sympy expressions by
 * speclib.web.codegen) defines SpeclibModel: the closed forms as JS functions,
 * the model's constants, and each figure's controls and axes. This file only
 * binds the constants, adds components up, loops over draft lengths and takes
 * argmaxes (the same glue as speclib.cost / speclib.speculation), and draws.
 *
 * Every notebook cell tagged figure-<name> (MyST-NB gives its container the
 * class tag_figure-<name>) gets controls and an SVG plot; its static PNG stays
 * in the page as the no-JavaScript fallback and is hidden here.
 * window.speclibLive.instances exposes each figure's parameters and arrays
 * (the browser tests compare them with speclib in Python), and
 * window.speclibLive.compute each kind's computation (tests/test_web.py runs
 * it in Node.js).
 */
(function () {
  "use strict";
  var M = window.SpeclibModel;
  if (!M) { return; }
  var F = M.formulas, K = M.constants, STYLE = M.style;
  var SVGNS = "http://www.w3.org/2000/svg";

  // --- the model, constants bound (speclib.cost.CostModel's glue) -----------

  // fn with its trailing constant arguments filled in. The argument array is
  // allocated once: these run ~10^6 times a redraw for the gamma* map.
  function bound(fn, entry) {
    var values = entry.values, n = fn.length - values.length, args = new Array(fn.length);
    for (var i = 0; i < values.length; i++) { args[n + i] = values[i]; }
    if (n === 1) { return function (a) { args[0] = a; return fn.apply(null, args); }; }
    if (n === 3) { return function (a, b, c) { args[0] = a; args[1] = b; args[2] = c; return fn.apply(null, args); }; }
    return function () {
      for (var j = 0; j < n; j++) { args[j] = arguments[j]; }
      return fn.apply(null, args);
    };
  }
  function costModel(entries, attnEntry) {
    var moeFfn = entries.ffn.formula === "moe";
    return {
      proj: bound(F.gemm_cost, entries.proj),
      projSlope: bound(F.gemm_slope, entries.proj),
      ffn: bound(moeFfn ? F.moe_cost : F.gemm_cost, entries.ffn),
      ffnSlope: bound(moeFfn ? F.moe_slope : F.gemm_slope, entries.ffn),
      attn: bound(F.attn_cost, attnEntry),
      attnSlope: bound(F.attn_slope, attnEntry),
      verify: function (B, q, S) {
        var t = B * q;
        return this.proj(t) + this.ffn(t) + this.attn(B, q, S);
      }
    };
  }
  // One cost model per (model, query bytes): the paper's ledger leaves
  // attention's query bytes out; a toggle counts them.
  var MODELS = {};
  function modelFor(p) {
    var key = p.model + (p.query_bytes ? "|q" : "");
    if (!MODELS[key]) {
      var entries = K.cost_models[p.model];
      MODELS[key] = costModel(entries, p.query_bytes ? entries.attn_with_query : entries.attn);
    }
    return MODELS[key];
  }
  // speclib.capacity.max_batch: the largest batch whose weights and KV caches
  // fit in HBM at context S (null when the model has no capacity constants).
  function maxBatch(model, S) {
    var cap = K.capacity && K.capacity[model];
    if (!cap) { return null; }
    var seq = F.sequence_bytes.apply(null, [S].concat(cap.sequence_bytes.values));
    var fit = cap.max_batch.values, weightsFit = fit[3] <= (1 - fit[1]) * fit[0] * fit[2];
    if (!(seq > 0)) { return weightsFit ? Infinity : 0; }
    return Math.max(F.max_batch(fit[0], fit[1], fit[2], fit[3], seq), 0);
  }
  function committed(alpha, gamma) {
    return alpha === 1 ? F.committed_at_one(gamma) : F.committed(alpha, gamma);
  }

  // --- grids ----------------------------------------------------------------

  function geomspace(lo, hi, n) {
    var a = Math.log10(lo), b = Math.log10(hi), out = new Array(n);
    for (var i = 0; i < n; i++) { out[i] = Math.pow(10, a + (b - a) * i / (n - 1)); }
    out[0] = lo; out[n - 1] = hi;
    return out;
  }
  function linspace(lo, hi, n) {
    var out = new Array(n);
    for (var i = 0; i < n; i++) { out[i] = lo + (hi - lo) * i / (n - 1); }
    out[n - 1] = hi;
    return out;
  }
  function integerBatches(lo, hi, n) {
    var seen = {}, out = [];
    geomspace(lo, hi, n).forEach(function (b) {
      var r = Math.round(b);
      if (!seen[r]) { seen[r] = true; out.push(r); }
    });
    return out;
  }
  function seqLength(u, map) { return map.base * Math.pow(2, map.span * u); }

  // --- what each figure computes ---------------------------------------------

  var COMPUTE = {
    // speclib.cost.marginal_cost / cost_shares over the batch axis.
    ledger: function (p, spec) {
      var model = modelFor(p), B = geomspace(spec.x.min, spec.x.max, spec.points), n = B.length;
      var out = {B: B, S: p.S, c_draft: p.c_draft, total: [], slopes: {attn_proj: [], moe: [], attention: []},
                 shares: {attn_proj: [], moe: [], attention: []}};
      for (var i = 0; i < n; i++) {
        var b = B[i];
        var cost = {attn_proj: model.proj(b), moe: model.ffn(b), attention: model.attn(b, 1, p.S)};
        // A speculated token lands at verify width 2 (speclib reads attention's slope there).
        var slope = {attn_proj: model.projSlope(b), moe: model.ffnSlope(b), attention: model.attnSlope(b, 2, p.S)};
        var sum = cost.attn_proj + cost.moe + cost.attention, total = 0;
        ["attn_proj", "moe", "attention"].forEach(function (key) {
          var share = cost[key] / sum;
          out.slopes[key].push(slope[key]);
          out.shares[key].push(share);
          total += slope[key] * share;
        });
        out.total.push(total + p.c_draft);
      }
      return out;
    },
    // speclib.speculation.optimal_gamma: argmax over gamma = 0..gamma_max, ties to the shorter draft.
    optimal_gamma: function (p, spec) {
      var B = integerBatches(spec.x.min, spec.x.max, spec.points);
      var grid = optimalGammaGrid(p, B, [p.S], spec.gamma_max);
      return {B: B, S: p.S, alpha: p.alpha, c_draft: p.c_draft, gamma_star: grid.gamma[0], speedup: grid.speedup[0],
              max_batch: maxBatch(p.model, p.S)};
    },
    gamma_map: function (p, spec) {
      var B = geomspace(spec.x.min, spec.x.max, spec.batch_points);
      var S = geomspace(spec.y.min, spec.y.max, spec.context_points);
      return {B: B, S: S, alpha: p.alpha, c_draft: p.c_draft,
              gamma_star: optimalGammaGrid(p, B, S, spec.gamma_max).gamma,
              max_batch: S.map(function (s) { return maxBatch(p.model, s); })};
    },
    attention_width: function (p, spec) {
      var T = geomspace(spec.x.min, spec.x.max, spec.points), out = {T: T, S: p.S, query_bytes: p.query_bytes,
        hardware: p.hardware, intensity: {}};
      Object.keys(K.attention_models).forEach(function (key) {
        var v = K.attention_models[key].values, m_q = p.query_bytes ? v[1] : 0;
        out.intensity[key] = T.map(function (t) { return F.attention_intensity(t, p.S, v[0], m_q, v[2]); });
      });
      out.ridge = K.ridges[p.hardware][K.attention_models.mla.precision];
      return out;
    },
    speedup_curves: function (p, spec) {
      var gammas = [];
      for (var g = 0; g <= spec.gamma_max; g++) { gammas.push(g); }
      var out = {gammas: gammas, batches: spec.batches.slice(), S: p.S, alpha: p.alpha, c_draft: p.c_draft,
                 table: [], gamma_star: [], best: []};
      spec.batches.forEach(function (b) {
        var c0 = modelFor(p).verify(b, 1, p.S);
        out.table.push(gammas.map(function (g) { return speedupAt(p, b, p.S, g, c0); }));
        var best = bestGamma(p, b, p.S, spec.gamma_max);
        out.gamma_star.push(best.gamma);
        out.best.push(best.speedup);
      });
      return out;
    },
    // speclib.moe.ffn_intensity / dense_equivalent_intensity for the chosen experts.
    expert_tax: function (p, spec) {
      var ffn = K.expert_ffn, fmt = ffn.formats[p.weights], ridge = K.ridges[p.hardware][fmt.precision];
      var k = Math.min(p.top_k, p.experts);  // as the widget: top-k cannot exceed the experts
      var B = spec.x.scale === "log" ? geomspace(1, spec.x.max, spec.points) : linspace(1, spec.x.max, spec.points);
      return {
        B: B, experts: p.experts, top_k: k, weights: p.weights, hardware: p.hardware, ridge: ridge,
        dense: B.map(function (b) { return F.dense_intensity(b, fmt.b, ridge); }),
        moe: B.map(function (b) { return F.moe_intensity(b, k, p.experts, ffn.n_s, fmt.b, ridge); })
      };
    }
  };
  COMPUTE.expert_tax_log = COMPUTE.expert_tax;

  // speclib.figures.attention_table: speclib.attention_intensity over Table 1's
  // grid; each variant's constants and effective contexts come from the presets.
  COMPUTE.attention_table = function (p) {
    var table = K.attention_table, entry = table.models[p.model];
    var variant = entry.kind === "gqa" ? "gqa" : (entry.variants[p.variant] ? p.variant : "mla");
    var v = entry.variants[variant], m_q = p.query_bytes ? v.values[1] : 0;
    return {
      model: p.model, variant: variant, hardware: p.hardware, query_bytes: p.query_bytes,
      contexts: table.contexts, widths: table.widths, ridge: K.ridges[p.hardware][entry.precision],
      values: v.S_eff.map(function (s) {
        return table.widths.map(function (t) { return F.attention_intensity(t, s, v.values[0], m_q, v.values[2]); });
      })
    };
  };
  // speclib.figures.compressed_attention: one panel per DeepSeek-V4 variant.
  COMPUTE.compressed_attention = function (p, spec) {
    var ca = K.compressed_attention, out = {S: ca.S, widths: spec.widths, query_bytes: p.query_bytes,
      hca_ratio: p.hca_ratio, csa_top_k: p.csa_top_k, csa_ratio: p.csa_ratio, intensity: {},
      ridge: K.ridges[K.hardware][ca.precision]};
    var entries = {hca: ca.hca[String(p.hca_ratio)], csa: ca.csa[p.csa_top_k + "/" + p.csa_ratio],
                   indexer: ca.indexer[String(p.csa_ratio)]};
    Object.keys(entries).forEach(function (key) {
      var v = entries[key], m_q = p.query_bytes ? v.values[1] : 0;
      out.intensity[key] = spec.widths.map(function (t) {
        return v.S_eff.map(function (s) { return F.attention_intensity(t, s, v.values[0], m_q, v.values[2]); });
      });
    });
    return out;
  };

  // Controls that only apply to some settings are greyed out, as in the notebook.
  var ENABLE = {
    attention_table: function (p, inputs) {
      inputs.variant.input.disabled = Object.keys(K.attention_table.models[p.model].variants).length < 2;
    }
  };

  // speclib.speculation: one verify pass of gamma drafts against plain decoding.
  function speedupAt(p, b, S, gamma, c0) {
    var cv = modelFor(p).verify(b, gamma + 1, S);
    return F.speedup(committed(p.alpha, gamma), c0, cv, p.c_draft, gamma);
  }
  function bestGamma(p, b, S, gammaMax) {
    var grid = optimalGammaGrid(p, [b], [S], gammaMax);
    return {gamma: grid.gamma[0][0], speedup: grid.speedup[0][0]};
  }
  // speclib.optimal_gamma over batches B (columns) and contexts Ss (rows):
  // argmax over gamma = 0..gammaMax, ties to the shorter draft. The weight
  // GEMMs' cost does not depend on S and N(alpha, gamma) not on B or S, so
  // each is computed once; the sums are taken in speclib's order
  // (proj + ffn + attention), so the numbers are the same to the last bit.
  function optimalGammaGrid(p, B, Ss, gammaMax) {
    var model = modelFor(p), N = [], gamma = Ss.map(function () { return []; }), speedup = Ss.map(function () { return []; });
    for (var g = 0; g <= gammaMax; g++) { N.push(committed(p.alpha, g)); }
    B.forEach(function (b) {
      var weights = [];
      for (var g = 0; g <= gammaMax; g++) { var t = b * (g + 1); weights.push(model.proj(t) + model.ffn(t)); }
      Ss.forEach(function (S, r) {
        var c0 = weights[0] + model.attn(b, 1, S), bestG = 0, bestS = -Infinity;
        for (var g = 0; g <= gammaMax; g++) {
          var sp = F.speedup(N[g], c0, weights[g] + model.attn(b, g + 1, S), p.c_draft, g);
          if (sp > bestS) { bestS = sp; bestG = g; }
        }
        gamma[r].push(bestG);
        speedup[r].push(bestS);
      });
    });
    return {gamma: gamma, speedup: speedup};
  }

  // --- how each figure is drawn ------------------------------------------------

  var C = STYLE.colors;
  function fmtInt(x) { return Math.round(x).toLocaleString("en-US"); }
  function fmtPct(x) { return Math.round(x * 100) + "%"; }
  function maxOf(a) { return a.reduce(function (m, v) { return v > m ? v : m; }, -Infinity); }
  function minOf(a) { return a.reduce(function (m, v) { return v < m ? v : m; }, Infinity); }
  function heading(p, rest) { return p.model + " on " + K.hardware + ": " + rest; }

  var DRAW = {
    ledger: function (d, p, spec) {
      var layers = [], legend = [], bottom = d.B.map(function () { return 0; });
      if (p.components) {
        spec.components.forEach(function (pair) {
          var key = pair[0];
          var part = key === "drafter" ? d.B.map(function () { return d.c_draft; })
            : d.B.map(function (_, i) { return d.slopes[key][i] * d.shares[key][i]; });
          var top = bottom.map(function (v, i) { return v + part[i]; });
          layers.push({type: "area", x: d.B, y0: bottom, y1: top, color: C[key], opacity: 0.35});
          legend.push({label: pair[1], color: C[key], kind: "area"});
          bottom = top;
        });
      }
      layers.push({type: "hline", y: 1, color: C.ridge, dash: true, label: "full price"});
      layers.push({type: "line", x: d.B, y: d.total, color: C.total});
      legend.unshift({label: "speculated token (total)", color: C.total, kind: "line"},
                     {label: "full price (1\u00d7 a real token)", color: C.ridge, kind: "dash"});
      return {
        title: heading(p, "price of a speculated token"),
        subtitle: "S = " + fmtInt(d.S) + " tokens, drafter " + fmtPct(d.c_draft) + " of a step" +
          (p.query_bytes ? ", query bytes counted" : ""),
        x: spec.x, y: {label: spec.y.label, scale: "linear", min: 0, max: Math.max(spec.y.max, maxOf(d.total) * 1.05)},
        layers: layers, legend: legend
      };
    },
    optimal_gamma: function (d, p, spec) {
      var layers = [], n = d.B.length, runs = [], start = null;
      for (var i = 0; i <= n; i++) {
        var zero = i < n && d.gamma_star[i] === 0;
        if (zero && start === null) { start = i; }
        if (!zero && start !== null) { runs.push([start, i - 1]); start = null; }
      }
      function edge(i, side) {  // the band reaches halfway (in log B) to the neighbouring batch
        var j = i + side;
        return (j < 0 || j >= n) ? d.B[i] : Math.sqrt(d.B[i] * d.B[j]);
      }
      runs.forEach(function (r) {
        var lo = edge(r[0], -1), hi = edge(r[1], 1);
        var gutter = r[0] > 0 && r[1] < n - 1;
        layers.push({type: "vband", x0: lo, x1: hi, color: C.gutter, opacity: 0.12});
        layers.push({type: "text", x: Math.sqrt(lo * hi), yFrac: 0.97, text: gutter ? "gutter" : "\u03b3* = 0",
                     color: C.gutter, anchor: "middle"});
      });
      var legend = [{label: "optimal draft length \u03b3*", color: C.total, kind: "line"},
                    {label: "\u03b3* = 0: plain decoding wins", color: C.gutter, kind: "area"}];
      if (d.max_batch !== null && d.max_batch < d.B[n - 1]) {  // batches that cannot fit in HBM
        var lo = Math.max(d.B[0], d.max_batch + 0.5);
        layers.push({type: "vband", x0: lo, x1: d.B[n - 1], color: C.memory, opacity: 0.22, hatch: true});
        layers.push({type: "text", x: Math.sqrt(lo * d.B[n - 1]), yFrac: 0.38, text: "does not fit: B > " +
                     fmtInt(d.max_batch), color: C.memory, anchor: "middle"});
        legend.push({label: "does not fit in HBM (weights + KV cache)", color: C.memory, kind: "area"});
      }
      layers.push({type: "line", x: d.B, y: d.gamma_star, color: C.total, step: true});
      return {
        title: heading(p, "optimal draft length"),
        subtitle: "S = " + fmtInt(d.S) + ", \u03b1 = " + fmtPct(d.alpha) + ", drafter " + fmtPct(d.c_draft) + " of a step",
        x: spec.x, y: {label: spec.y.label, scale: "linear", min: 0, max: Math.max(spec.y.max, maxOf(d.gamma_star) + 2), integer: true},
        layers: layers,
        legend: legend
      };
    },
    speedup_curves: function (d, p, spec) {
      var xHi = Math.min(spec.gamma_max, Math.max(spec.x.max, maxOf(d.gamma_star) + 4));
      var visible = [], layers = [], legend = [];
      d.table.forEach(function (row) { visible = visible.concat(row.slice(0, xHi + 1)); });
      var lo = minOf(visible), hi = maxOf(visible), pad = 0.05 * Math.max(hi - lo, 0.1);
      layers.push({type: "hline", y: 1, color: C.ridge, dash: true, label: "no speculation"});
      d.batches.forEach(function (b, i) {
        var color = STYLE.cycle[i % STYLE.cycle.length];
        layers.push({type: "line", x: d.gammas, y: d.table[i], color: color, width: 1.6, markers: true});
        layers.push({type: "star", x: d.gamma_star[i], y: d.best[i], color: color});
        legend.push({label: "B = " + fmtInt(b) + ": \u03b3* = " + d.gamma_star[i], color: color, kind: "line"});
      });
      return {
        title: heading(p, "speedup against draft length"),
        subtitle: "S = " + fmtInt(d.S) + ", \u03b1 = " + fmtPct(d.alpha) + ", drafter " + fmtPct(d.c_draft) + "; \u2605 = best \u03b3 at each batch",
        x: {label: spec.x.label, scale: "linear", min: -0.3, max: xHi + 0.3, integer: true},
        y: {label: spec.y.label, scale: "linear", min: Math.min(lo, 1) - pad, max: Math.max(hi, 1) + pad},
        layers: layers, legend: legend
      };
    },
    expert_tax: function (d, p, spec) {
      var shared = K.expert_ffn.n_s ? " + " + K.expert_ffn.n_s + " shared" : "";
      var fmt = K.expert_ffn.formats[p.weights], log = spec.x.scale === "log";
      var y = log ? {label: spec.y.label, scale: "log", min: spec.y.min, max: Math.max(spec.y.max, d.ridge * 1.6)} : spec.y;
      var x = log ? {label: spec.x.label, scale: "log", min: 1, max: spec.x.max} : spec.x;
      return {
        title: K.model + " FFN on " + d.hardware + ": the expert tax",
        subtitle: "top-" + d.top_k + " of " + d.experts + " routed experts" + shared + ", " + p.weights + " weights",
        x: x, y: y,
        layers: [
          {type: "area", x: d.B, y0: null, y1: d.dense, where: d.dense.map(function (v) { return v < d.ridge; }), color: C.dense, opacity: 0.15},
          {type: "area", x: d.B, y0: null, y1: d.moe, where: d.moe.map(function (v) { return v < d.ridge; }), color: C.moe, opacity: 0.15},
          {type: "hline", y: d.ridge, color: C.ridge, dash: true, anchor: "start",
           label: d.hardware + " " + fmt.precision + " ridge: " + fmtInt(d.ridge) + " FLOP/byte"},
          {type: "line", x: d.B, y: d.dense, color: C.dense},
          {type: "line", x: d.B, y: d.moe, color: C.moe}
        ],
        legend: [{label: "dense FFN, same weights (" + fmt.b + " B/param)", color: C.dense, kind: "line"},
                 {label: "MoE: top-" + d.top_k + " of " + d.experts + shared + " experts", color: C.moe, kind: "line"},
                 {label: "memory-bound: speculated tokens ~free", color: C.dense, kind: "area"},
                 {label: "ridge (compute-bound above)", color: C.ridge, kind: "dash"}]
      };
    },
    gamma_map: function (d, p, spec) {
      var vmax = 6;
      d.gamma_star.forEach(function (row) { vmax = Math.max(vmax, maxOf(row)); });
      var legend = [{label: "\u03b3* = 0: plain decoding wins", color: C.gamma_zero, kind: "cell"}];
      var step = Math.max(1, Math.floor(vmax / 6));
      for (var g = 1; g <= vmax; g += step) {
        legend.push({label: "\u03b3* = " + g, color: viridisOf(g, vmax), kind: "cell"});
      }
      var layers = [{type: "heatmap", x: d.B, y: d.S, z: d.gamma_star,
                     color: function (g) { return g === 0 ? C.gamma_zero : viridisOf(g, vmax); }}];
      if (d.max_batch.some(function (m) { return m !== null && m < d.B[d.B.length - 1]; })) {
        layers.push({type: "rowbands", x: d.B, y: d.S, from: d.max_batch.map(function (m) { return m + 0.5; }),
                     color: C.memory, opacity: 0.22});
        legend.push({label: "does not fit in HBM (weights + KV cache)", color: C.memory, kind: "area"});
      }
      return {
        title: heading(p, "\u03b3* over batch and sequence length"),
        subtitle: "\u03b1 = " + fmtPct(d.alpha) + ", drafter " + fmtPct(d.c_draft) + " of a step",
        x: spec.x, y: spec.y, noGrid: true,
        layers: layers,
        legend: legend
      };
    },
    attention_width: function (d, p, spec) {
      var all = [d.ridge], layers = [], legend = [];
      Object.keys(d.intensity).forEach(function (key) {
        all = all.concat(d.intensity[key]);
        layers.push({type: "line", x: d.T, y: d.intensity[key], color: C[key]});
        legend.push({label: K.attention_models[key].label, color: C[key], kind: "line"});
      });
      layers.unshift({type: "hline", y: d.ridge, color: C.ridge, dash: true,
                      label: d.hardware + " bf16 ridge " + fmtInt(d.ridge)});
      var lo = Math.pow(10, Math.floor(Math.log10(minOf(all) / 1.5)));
      var hi = Math.pow(10, Math.ceil(Math.log10(maxOf(all) * 1.5)));
      return {
        title: "Attention intensity against verify width on " + d.hardware,
        subtitle: "S = " + fmtInt(d.S) + (d.query_bytes ? "" : ", query bytes left out"),
        x: spec.x, y: {label: spec.y.label, scale: "log", min: lo, max: hi},
        layers: layers, legend: legend
      };
    }
  };
  DRAW.expert_tax_log = DRAW.expert_tax;

  DRAW.attention_table = function (d) {
    var table = document.createElement("table");
    table.className = "speclib-intensity-table";
    var caption = document.createElement("caption");
    caption.textContent = "Rows: context S; columns: query tokens per sequence T. Compute-bound (above the " +
      d.hardware + " bf16 ridge, " + d.ridge.toFixed(2) + " FLOP/byte) in bold.";
    table.appendChild(caption);
    var head = table.createTHead().insertRow();
    ["S \\ T"].concat(d.widths.map(fmtInt)).forEach(function (text) {
      var th = document.createElement("th"); th.textContent = text; head.appendChild(th);
    });
    var body = table.createTBody();
    d.contexts.forEach(function (s, i) {
      var row = body.insertRow(), th = document.createElement("th");
      th.textContent = fmtInt(s);
      row.appendChild(th);
      d.values[i].forEach(function (v) {
        var td = row.insertCell();
        td.textContent = fmtInt(v);
        td.className = v > d.ridge ? "compute-bound" : "memory-bound";
      });
    });
    return {
      title: d.model + ": attention intensity (FLOP/byte), variant " + d.variant,
      subtitle: d.query_bytes ? "query bytes counted" : "query bytes left out",
      table: table
    };
  };
  DRAW.compressed_attention = function (d, p, spec) {
    var all = [d.ridge], names = {};
    spec.panels.forEach(function (pair) { names[pair[0]] = pair[1]; });
    Object.keys(d.intensity).forEach(function (key) { d.intensity[key].forEach(function (row) { all = all.concat(row); }); });
    var yMax = niceCeiling(maxOf(all) * 1.1);
    var titles = {hca: "HCA: MLA over S/" + d.hca_ratio, csa: "CSA main: MLA over top " + fmtInt(d.csa_top_k),
                  indexer: "CSA indexer: scores S/" + d.csa_ratio};
    var panels = spec.panels.map(function (pair) {
      var key = pair[0], layers = [{type: "hline", y: d.ridge, color: C.ridge, dash: true}];
      d.widths.forEach(function (t, i) {
        layers.push({type: "line", x: d.S, y: d.intensity[key][i], color: STYLE.cycle[i % STYLE.cycle.length]});
      });
      return {panelTitle: titles[key], size: {w: 330, h: 330}, layers: layers,
              x: {label: spec.x.label, scale: "log", base: 2, min: spec.x.min, max: spec.x.max, sparse: true},
              y: {label: spec.y.label, scale: "linear", min: 0, max: yMax}};
    });
    var legend = d.widths.map(function (t, i) {
      return {label: "T = " + t, color: STYLE.cycle[i % STYLE.cycle.length], kind: "line"};
    });
    legend.push({label: "bf16 ridge " + fmtInt(d.ridge), color: C.ridge, kind: "dash"});
    return {
      title: K.model + " attention variants on " + K.hardware,
      subtitle: d.query_bytes ? "query bytes counted" : "query bytes left out",
      panels: panels, legend: legend
    };
  };
  function niceCeiling(v) {
    var mag = Math.pow(10, Math.floor(Math.log10(v))), out = 10 * mag;
    [1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10].some(function (m) { if (m * mag >= v) { out = m * mag; return true; } return false; });
    return out;
  }

  // Whole draft lengths as matplotlib's viridis resampled to vmax colours.
  function viridisOf(g, vmax) {
    var stops = STYLE.viridis, pos = vmax > 1 ? (g - 1) / (vmax - 1) : 0;
    var at = Math.min(Math.max(pos, 0), 1) * (stops.length - 1), i = Math.min(Math.floor(at), stops.length - 2);
    var a = hexRgb(stops[i]), b = hexRgb(stops[i + 1]), f = at - i;
    return "rgb(" + a.map(function (v, j) { return Math.round(v + (b[j] - v) * f); }).join(",") + ")";
  }
  function hexRgb(hex) {
    return [1, 3, 5].map(function (i) { return parseInt(hex.slice(i, i + 2), 16); });
  }

  // --- the sequel's chapters: a whole step in seconds ------------------------------
  // The glue of speclib.core.step.StepModel, speclib.core.drafters and the
  // priced policy (speclib.core.speculation.StepPricing); every closed form
  // is a generated function of F.

  var SQ = K.sequel;
  var SEQUEL_DRAFTERS = SQ.drafter_order;
  var RULES = ["aggregate", "per-component"];

  // StepModel.time: each component's FLOPs and bytes, priced per component
  // (the rooflines added) or as one roofline per precision stream.
  function stepModel(arch, hwName, roofline) {
    var hw = SQ.hardware[hwName], M = hw.bandwidth;
    var prec = [arch.dense_precision, arch.ffn_precision, arch.attention_precision];
    function components(B, T, S) {
      var A = arch.n_routed > 0 ? F.experts_touched(B, T, arch.top_k, arch.n_routed) : 0;
      return [[F.dense_flops(arch.dense_params, B, T), F.dense_bytes(arch.dense_params, arch.dense_bytes)],
              [F.expert_flops(arch.ffn_params, arch.top_k, arch.n_shared, B, T),
               F.expert_bytes(arch.ffn_params, arch.ffn_bytes, arch.n_shared, A)],
              // the simulator charges no FLOPs for linear attention (phi = 0)
              [F.attention_flops(B, T, S, arch.attention_layers, arch.flops_per_pair, arch.linear_layers, 0),
               F.attention_bytes(B, T, S, arch.attention_layers, arch.context_bytes, arch.linear_layers,
                                 arch.state_bytes)]];
    }
    return {
      time: function (B, T, S) {
        var c = components(B, T, S), total = 0, i;
        if (roofline === "per-component") {
          for (i = 0; i < 3; i++) { total += F.roofline_time(c[i][0], c[i][1], hw.peak[prec[i]], M); }
          return total;
        }
        var order = [], sums = {};
        for (i = 0; i < 3; i++) {
          if (!sums[prec[i]]) { order.push(prec[i]); sums[prec[i]] = [0, 0]; }
          sums[prec[i]][0] += c[i][0];
          sums[prec[i]][1] += c[i][1];
        }
        order.forEach(function (p) { total += F.roofline_time(sums[p][0], sums[p][1], hw.peak[p], M); });
        return total;
      }
    };
  }
  // PricedDrafter.time: MTP drafts gamma passes of one position, DFlash one pass over its block.
  function drafterTime(key, hwName, roofline) {
    var d = SQ.drafters[key], pass = stepModel(SQ.architectures[key], hwName, roofline);
    var draft = d.kind === "mtp" ? F.mtp_draft_time : F.dflash_draft_time;
    return function (gamma, B) { return draft(gamma, pass.time(B, d.positions, 0)); };
  }
  // speclib.core.drafters.crossover_batch: the same bisection.
  function crossoverBatch(gamma, mtp, dflash) {
    function cheaper(b) { return dflash(gamma, b) < mtp(gamma, b); }
    var lo = 1, hi = 1e6;
    if (!cheaper(lo)) { return 0; }
    if (cheaper(hi)) { return Infinity; }
    while (hi - lo > 1e-9 * hi) {
      var mid = 0.5 * (lo + hi);
      if (cheaper(mid)) { lo = mid; } else { hi = mid; }
    }
    return hi;
  }
  // The policy's survival curve: measured, or alpha**d with alpha = s_1.
  function survivalOf(key, acceptance) {
    var s = SQ.drafters[key].survival;
    if (acceptance === "measured") { return s; }
    return s.map(function (_, i) { return F.iid_survival(s[0], i + 1); });
  }
  // SurvivalCurve.committed_table: N(0) plus the running sum of the survivals.
  function committedTable(curve) {
    var N0 = F.committed_at_zero(), run = 0, N = [N0 + 0];
    curve.forEach(function (v) { run += v; N.push(N0 + run); });
    return N;
  }
  // StepPricing on the simulated target (B200) and speclib.speculation.best_gamma.
  function pricedPolicy(key, roofline, acceptance) {
    var target = stepModel(SQ.architectures.target, "B200", roofline), draft = drafterTime(key, "B200", roofline);
    var S = SQ.context, N = committedTable(survivalOf(key, acceptance));
    var gammaMax = Math.min(SQ.grid.drafters[key].gamma_max, N.length - 1);
    function step(g, B) { return target.time(B, g + 1, S) + draft(g, B); }
    return {
      throughput: function (B, g) { return F.throughput(B, N[g], step(g, B)); },
      best: function (B) {
        var plain = target.time(B, 1, S), bestG = 0, bestS = -Infinity;
        for (var g = 0; g <= gammaMax; g++) {
          var sp = F.priced_speedup(N[g], plain, step(g, B));
          if (sp > bestS) { bestS = sp; bestG = g; }
        }
        return bestG;
      }
    };
  }
  // The simulator's best fixed gamma and its throughput at each concurrency.
  function simulatedBest(key) {
    var rows = SQ.grid.drafters[key], gamma = [], goodput = [];
    SQ.grid.concurrency.forEach(function (_, j) {
      var best = 0;
      rows.goodput.forEach(function (row, i) { if (row[j] > rows.goodput[best][j]) { best = i; } });
      gamma.push(rows.gammas[best]);
      goodput.push(rows.goodput[best][j]);
    });
    return {gamma: gamma, goodput: goodput};
  }
  function niceLogBounds(values) {
    var v = values.filter(function (x) { return isFinite(x) && x > 0; }), lo = minOf(v), hi = maxOf(v);
    var steps = [1, 2, 5, 10], eLo = Math.pow(10, Math.floor(Math.log10(lo))), eHi = Math.pow(10, Math.floor(Math.log10(hi)));
    var below = eLo, above = 10 * eHi;
    steps.forEach(function (s) { if (s * eLo <= lo * (1 + 1e-12)) { below = s * eLo; } });
    steps.slice().reverse().forEach(function (s) { if (s * eHi >= hi * (1 - 1e-12)) { above = s * eHi; } });
    return [below, above];
  }
  function decadeBounds(values, pad) {
    var v = values.filter(function (x) { return isFinite(x) && x > 0; });
    return [Math.pow(10, Math.floor(Math.log10(minOf(v) / (pad || 1)))),
            Math.pow(10, Math.ceil(Math.log10(maxOf(v) * (pad || 1))))];
  }
  function flat(rows) { return rows.reduce(function (a, r) { return a.concat(r); }, []); }
  function range(lo, hi) { var out = []; for (var g = lo; g <= hi; g++) { out.push(g); } return out; }

  COMPUTE.drafter_cost = function (p, spec) {
    var B = geomspace(spec.x.min, spec.x.max, spec.points), g = p.gamma, top = spec.controls[0].max;
    var mtp = drafterTime("mtp", p.hardware, p.roofline), df = drafterTime("dflash", p.hardware, p.roofline);
    var target = stepModel(SQ.architectures.target, p.hardware, p.roofline);
    return {B: B, gamma: g, roofline: p.roofline, hardware: p.hardware,
            mtp: B.map(function (b) { return mtp(g, b); }), dflash: B.map(function (b) { return df(g, b); }),
            target: B.map(function (b) { return target.time(b, 1, SQ.context); }),
            mtp_longest: B.map(function (b) { return mtp(top, b); }), crossover: crossoverBatch(g, mtp, df)};
  };
  COMPUTE.drafter_crossover = function (p, spec) {
    var B = geomspace(spec.x.min, spec.x.max, spec.points), gammas = range(1, spec.gamma_max);
    var mtp = drafterTime("mtp", p.hardware, p.roofline), df = drafterTime("dflash", p.hardware, p.roofline);
    var closed = bound(F.drafter_crossover_batch, SQ.crossover[p.hardware]);
    var lineGamma = linspace(1, spec.gamma_max, spec.line_points), exactGamma = range(2, spec.gamma_max);
    return {B: B, gammas: gammas, roofline: p.roofline, hardware: p.hardware,
            log2_ratio: gammas.map(function (g) { return B.map(function (b) { return Math.log2(mtp(g, b) / df(g, b)); }); }),
            closed_gamma: lineGamma, closed: lineGamma.map(function (g) { return closed(g); }),
            exact_gamma: exactGamma, exact: exactGamma.map(function (g) { return crossoverBatch(g, mtp, df); })};
  };
  COMPUTE.hybrid_intensity = function (p, spec) {
    var T = geomspace(spec.x.min, spec.x.max, spec.points), h = SQ.hybrid, gdn = bound(F.linear_intensity, h.gdn);
    var out = {T: T, S: p.S, query_bytes: p.query_bytes, hardware: p.hardware, intensity: {},
               ridge: K.ridges[p.hardware][h.precision]};
    ["mla", "gqa"].forEach(function (key) {
      var v = h[key].values, m_q = p.query_bytes ? v[1] : 0;
      out.intensity[key] = T.map(function (t) { return F.attention_intensity(t, p.S, v[0], m_q, v[2]); });
    });
    out.intensity.gdn = T.map(function (t) { return gdn(t); });
    return out;
  };
  COMPUTE.kv_state_bytes = function (p, spec) {
    var h = SQ.hybrid, S = geomspace(spec.x.min, spec.x.max, spec.points);
    var La = p.full_attention_layers, Ll = h.layers - La;
    var m_c = F.gqa_context_bytes(h.gqa_cache.n_kv, h.gqa_cache.d_h, h.kv_formats[p.kv_format]);
    var sigma = F.linear_state_bytes.apply(null, h.gdn.values);
    function at(La_, Ll_) { return S.map(function (s) { return F.cache_bytes(1, s, La_, m_c, Ll_, sigma); }); }
    return {S: S, full_attention_layers: La, kv_format: p.kv_format, context_bytes: m_c, state_bytes: sigma,
            kv: at(La, 0), state: at(0, Ll), total: at(La, Ll), all_full: at(h.layers, 0),
            crossing: Ll > 0 ? F.kv_state_crossing(La, m_c, Ll, sigma) : null};
  };
  COMPUTE.concurrency_gamma = function (p, spec) {
    var B = integerBatches(spec.x.min, spec.x.max, spec.points);
    var out = {B: B, C: SQ.grid.concurrency, roofline: p.roofline, acceptance: p.acceptance, gamma_star: {},
               simulated_best: {}};
    SEQUEL_DRAFTERS.forEach(function (key) {
      out.gamma_star[key] = B.map(pricedPolicy(key, p.roofline, p.acceptance).best);
      out.simulated_best[key] = simulatedBest(key).gamma;
    });
    return out;
  };
  // Each fixed gamma of the grid and the priced policy, at every batch B.
  function perDrafter(B, roofline, acceptance) {
    var out = {};
    SEQUEL_DRAFTERS.forEach(function (key) {
      var pol = pricedPolicy(key, roofline, acceptance), rows = SQ.grid.drafters[key], g = B.map(pol.best);
      out[key] = {gammas: rows.gammas, policy_gamma: g,
                  throughput: rows.gammas.map(function (gamma) { return B.map(function (b) { return pol.throughput(b, gamma); }); }),
                  policy: B.map(function (b, i) { return pol.throughput(b, g[i]); })};
    });
    return out;
  }
  COMPUTE.concurrency_throughput = function (p, spec) {
    var B = integerBatches(spec.x.min, spec.x.max, spec.points);
    return {B: B, C: SQ.grid.concurrency, roofline: p.roofline, relative: p.relative,
            drafters: perDrafter(B, p.roofline, "measured")};
  };
  COMPUTE.throughput_tpot = function (p, spec) {
    var B = integerBatches(spec.concurrency.min, spec.concurrency.max, spec.points), C = SQ.grid.concurrency;
    var out = {B: B, C: C, roofline: p.roofline, acceptance: p.acceptance,
               drafters: perDrafter(B, p.roofline, p.acceptance)};
    function tpot(b, x) { return F.time_per_output_token(b, x) * 1e3; }
    var xs = [], ys = [];
    SEQUEL_DRAFTERS.forEach(function (key) {
      var d = out.drafters[key], rows = SQ.grid.drafters[key];
      d.tpot_ms = d.throughput.map(function (row) { return row.map(function (x, i) { return tpot(B[i], x); }); });
      d.policy_tpot_ms = d.policy.map(function (x, i) { return tpot(B[i], x); });
      d.simulated_tpot_ms = rows.goodput.map(function (row) { return row.map(function (x, j) { return tpot(C[j], x); }); });
      d.adaptive_tpot_ms = rows.adaptive_goodput.map(function (x, j) { return tpot(C[j], x); });
      xs = xs.concat(flat(d.tpot_ms), flat(d.simulated_tpot_ms));
      ys = ys.concat(flat(d.throughput), flat(rows.goodput));
    });
    out.x_limits = niceLogBounds(xs);
    out.y_limits = [1e3, niceLogBounds(ys)[1]];
    out.tau_ms = geomspace(out.x_limits[0], out.x_limits[1], spec.contour_points);
    out.contours = C.map(function (c) { return out.tau_ms.map(function (t) { return F.closed_loop_throughput(c, t / 1e3); }); });
    return out;
  };
  COMPUTE.pricing_ratio = function (p, spec) {
    var B = geomspace(spec.x.min, spec.x.max, spec.points), arch = SQ.architectures[p.model];
    var per = stepModel(arch, p.hardware, "per-component"), agg = stepModel(arch, p.hardware, "aggregate");
    return {B: B, S: p.S, model: p.model, hardware: p.hardware, widths: spec.widths,
            ratio: spec.widths.map(function (t) {
              return B.map(function (b) { return per.time(b, t, p.S) / agg.time(b, t, p.S); });
            })};
  };
  COMPUTE.pricing_gamma = function (p, spec) {
    var B = integerBatches(spec.x.min, spec.x.max, spec.points), C = SQ.grid.concurrency;
    var rows = SQ.grid.drafters[p.drafter], best = simulatedBest(p.drafter);
    var out = {B: B, C: C, drafter: p.drafter, acceptance: p.acceptance, simulated_best: best.gamma,
               gamma_star: {}, grid_gamma: {}, shortfall: {}};
    RULES.forEach(function (rule) {
      var pol = pricedPolicy(p.drafter, rule, p.acceptance), g = C.map(pol.best);
      out.gamma_star[rule] = B.map(pol.best);
      out.grid_gamma[rule] = g;
      out.shortfall[rule] = g.map(function (gamma, j) {
        return 1 - rows.goodput[rows.gammas.indexOf(gamma)][j] / best.goodput[j];
      });
    });
    return out;
  };

  // --- how the sequel's figures are drawn ---
  function rampOf(stops, pos) {
    var at = Math.min(Math.max(pos, 0), 1) * (stops.length - 1), i = Math.min(Math.floor(at), stops.length - 2);
    var a = hexRgb(stops[i]), b = hexRgb(stops[i + 1]), f = at - i;
    return "rgb(" + a.map(function (v, j) { return Math.round(v + (b[j] - v) * f); }).join(",") + ")";
  }
  function gammaColor(g, gmax) { return g === 0 ? C.total : viridisOf(g, gmax); }
  function scaled(a, k) { return a.map(function (v) { return v * k; }); }
  var RULE_LABEL = {"aggregate": "aggregate rule", "per-component": "per-component rule"};
  var ROOFLINE_NOTE = {"aggregate": "one roofline over the step", "per-component": "each component its own roofline"};
  var CONCURRENCY_PANEL = {w: 340, h: 330};

  DRAW.drafter_cost = function (d, p, spec) {
    var us = {mtp: scaled(d.mtp, 1e6), dflash: scaled(d.dflash, 1e6), target: scaled(d.target, 1e6)};
    var yb = decadeBounds(us.mtp.concat(scaled(d.mtp_longest, 1e6), us.dflash, us.target));
    var layers = [{type: "line", x: d.B, y: us.target, color: C.ridge, dash: true, width: 1.4},
                  {type: "line", x: d.B, y: us.mtp, color: C.mtp}, {type: "line", x: d.B, y: us.dflash, color: C.dflash}];
    var n = d.B.length;
    if (d.crossover > d.B[0] && d.crossover < d.B[n - 1]) {
      layers.push({type: "vline", x: d.crossover, color: C.total, dash: true});
      layers.push({type: "text", x: d.crossover * 1.08, yFrac: 0.1, text: "same cost at B \u2248 " + fmtInt(d.crossover),
                   color: C.total});
    } else {
      layers.push({type: "text", x: d.B[0] * 1.2, yFrac: 0.1, color: C.total,
                   text: d.crossover === 0 ? "MTP is cheaper at every batch" : "DFlash is cheaper at every batch shown"});
    }
    return {
      title: "What drafting costs on " + d.hardware,
      subtitle: "\u03b3 = " + d.gamma + ", " + ROOFLINE_NOTE[d.roofline],
      x: spec.x, y: {label: spec.y.label, scale: "log", min: yb[0], max: yb[1]}, layers: layers,
      legend: [{label: "MTP: \u03b3 passes of one position", color: C.mtp, kind: "line"},
               {label: "DFlash: one pass over its block", color: C.dflash, kind: "line"},
               {label: "the target's plain decode step (S = " + SQ.context + ")", color: C.ridge, kind: "dash"}]
    };
  };
  DRAW.drafter_crossover = function (d, p, spec) {
    var vmax = spec.ratio_max, legend = [];
    [-3, -2, -1, 0, 1, 2, 3].forEach(function (v) {
      var times = Math.pow(2, Math.abs(v)) + "\u00d7";
      legend.push({label: v === 0 ? "equal" : (v > 0 ? "DFlash " : "MTP ") + times + " cheaper", kind: "cell",
                   color: rampOf(STYLE.diverging, (v + vmax) / (2 * vmax))});
    });
    legend.push({label: "closed form: MTP saturated, DFlash compute-bound", color: C.total, kind: "dash"},
                {label: "exact: equal draft times", color: C.total, kind: "ring"});
    return {
      title: "Which drafter is cheaper on " + d.hardware, subtitle: ROOFLINE_NOTE[d.roofline],
      x: spec.x, y: {label: spec.y.label, scale: "linear", min: spec.y.min, max: spec.y.max, integer: true}, noGrid: true,
      layers: [{type: "heatmap", x: d.B, y: d.gammas, z: d.log2_ratio,
                color: function (v) { return rampOf(STYLE.diverging, (v + vmax) / (2 * vmax)); }},
               {type: "line", x: d.closed, y: d.closed_gamma, color: "#ffffff", width: 2.4},
               {type: "line", x: d.closed, y: d.closed_gamma, color: C.total, width: 1, dash: true},
               {type: "points", x: d.exact, y: d.exact_gamma, color: C.total, hollow: true, size: 3.5}],
      legend: legend
    };
  };
  DRAW.hybrid_intensity = function (d, p, spec) {
    var h = SQ.hybrid, all = [d.ridge], layers = [], xs = [], ys = [];
    var labels = {mla: h.mla.model + ": MLA", gqa: h.model + ": GQA full attention",
                  gdn: h.model + ": GatedDeltaNet"};
    ["mla", "gqa", "gdn"].forEach(function (key) {
      var ai = d.intensity[key];
      all = all.concat(ai);
      layers.push({type: "line", x: d.T, y: ai, color: C[key]});
      for (var i = 1; i < ai.length; i++) {
        if (ai[i] > d.ridge) { if (ai[i - 1] <= d.ridge) { xs.push(d.T[i]); ys.push(ai[i]); } break; }
      }
    });
    layers.unshift({type: "hline", y: d.ridge, color: C.ridge, dash: true,
                    label: d.hardware + " " + h.precision + " ridge " + fmtInt(d.ridge)});
    layers.push({type: "points", x: xs, y: ys, color: "#000000", size: 3.5});
    var yb = decadeBounds(all, 1.5);
    return {
      title: "Intensity against verify width on " + d.hardware,
      subtitle: "S = " + fmtInt(d.S) + (d.query_bytes ? "" : ", query bytes left out"),
      x: spec.x, y: {label: spec.y.label, scale: "log", min: Math.min(yb[0], 1), max: Math.max(yb[1], 1e5)},
      layers: layers,
      legend: ["mla", "gqa", "gdn"].map(function (key) { return {label: labels[key], color: C[key], kind: "line"}; })
    };
  };
  DRAW.kv_state_bytes = function (d, p, spec) {
    function mb(a) { return a.map(function (v) { return v > 0 ? v * 1e-6 : NaN; }); }
    var layers = [{type: "line", x: d.S, y: mb(d.all_full), color: C.ridge, dash: true, width: 1.6},
                  {type: "line", x: d.S, y: mb(d.kv), color: C.gqa}, {type: "line", x: d.S, y: mb(d.state), color: C.gdn},
                  {type: "line", x: d.S, y: mb(d.total), color: C.total, width: 1.4}];
    if (d.crossing !== null && d.crossing > d.S[0] && d.crossing < d.S[d.S.length - 1]) {
      var y = F.cache_bytes(1, d.crossing, 0, d.context_bytes, SQ.hybrid.layers - d.full_attention_layers, d.state_bytes) * 1e-6;
      layers.push({type: "points", x: [d.crossing], y: [y], color: "#000000", size: 3.5});
      layers.push({type: "label", x: d.crossing * 1.15, y: y / 1.4, text: "equal at S = " + fmtInt(d.crossing),
                   color: C.total});
    }
    var yb = decadeBounds(mb(d.all_full).concat(mb(d.state)));
    return {
      title: "KV cache against recurrent state: " + SQ.hybrid.model,
      subtitle: d.full_attention_layers + " of " + SQ.hybrid.layers + " layers full attention, KV " +
        fmtInt(d.context_bytes) + " B per token per layer",
      x: spec.x, y: {label: spec.y.label, scale: "log", min: yb[0], max: yb[1]}, layers: layers,
      legend: [{label: "KV cache (full-attention layers)", color: C.gqa, kind: "line"},
               {label: "state (GatedDeltaNet layers)", color: C.gdn, kind: "line"},
               {label: "both", color: C.total, kind: "line"},
               {label: "every layer full attention", color: C.ridge, kind: "dash"}]
    };
  };
  DRAW.concurrency_gamma = function (d, p, spec) {
    var layers = [], legend = [], marker = {mtp: "circle", dflash: "square"};
    SEQUEL_DRAFTERS.forEach(function (key) {
      layers.push({type: "line", x: d.B, y: d.gamma_star[key], color: C[key], step: true});
      layers.push({type: "points", x: d.C, y: d.simulated_best[key], color: C[key], hollow: true, marker: marker[key],
                   size: 4});
      legend.push({label: spec.drafters[key] + ": priced policy (ours)", color: C[key], kind: "line"},
                  {label: spec.drafters[key] + ": the simulator's best fixed \u03b3", color: C[key],
                   kind: marker[key] === "square" ? "box" : "ring"});
    });
    var top = 0;
    SEQUEL_DRAFTERS.forEach(function (key) { top = Math.max(top, SQ.grid.drafters[key].gamma_max); });
    return {
      title: "Draft length per concurrency on B200",
      subtitle: ROOFLINE_NOTE[d.roofline] + ", " + d.acceptance + " acceptance",
      x: {label: spec.x.label, scale: "log", base: 2, min: spec.x.min / 1.2, max: spec.x.max * 1.2},
      y: {label: spec.y.label, scale: "linear", min: 0, max: top + 4, integer: true}, layers: layers, legend: legend
    };
  };
  function perDrafterLegend() {
    return [{label: "no speculation", color: C.total, kind: "line"},
            {label: "fixed \u03b3 (dark: 1, yellow: longest)", color: viridisOf(1, 2), kind: "line"},
            {label: "priced policy", color: C.policy, kind: "dash"},
            {label: "simulator, fixed \u03b3", color: C.ridge, kind: "point"},
            {label: "simulator's policy", color: C.policy, kind: "cross"}];
  }
  function perDrafterLayers(key, xOf, yOf, simX, simY, policyX, policyY, adaptX, adaptY) {
    var rows = SQ.grid.drafters[key], layers = [];
    rows.gammas.forEach(function (g, i) {
      var color = gammaColor(g, rows.gamma_max);
      layers.push({type: "line", x: xOf(i), y: yOf(i), color: color, width: g === 0 ? 1.8 : 1});
      layers.push({type: "points", x: simX(i), y: simY(i), color: color, size: 2});
    });
    layers.push({type: "line", x: policyX, y: policyY, color: C.policy, width: 2.2, dash: true});
    layers.push({type: "points", x: adaptX, y: adaptY, color: C.policy, marker: "cross", size: 4});
    return layers;
  }
  DRAW.concurrency_throughput = function (d, p, spec) {
    var tops = [], parts = {};
    SEQUEL_DRAFTERS.forEach(function (key) {
      var o = d.drafters[key], rows = SQ.grid.drafters[key];
      var base = d.relative ? o.throughput[0] : null, simBase = d.relative ? rows.goodput[0] : null;
      function rel(a, b) { return b ? a.map(function (v, i) { return v / b[i]; }) : a; }
      parts[key] = {fixed: o.throughput.map(function (r) { return rel(r, base); }), policy: rel(o.policy, base),
                    sim: rows.goodput.map(function (r) { return rel(r, simBase); }),
                    adaptive: rel(rows.adaptive_goodput, simBase)};
      tops = tops.concat(flat(parts[key].fixed), flat(parts[key].sim));
    });
    var y = d.relative ? {label: "throughput over plain decoding (\u00d7)", scale: "linear", min: 0, max: niceCeiling(1.05 * maxOf(tops))}
      : {label: "committed output tokens per second", scale: "log", min: 1e3, max: decadeBounds(tops)[1]};
    var x = {label: spec.x.label, scale: "log", base: 2, min: spec.x.min / 1.25, max: spec.x.max * 1.25};
    return {
      title: (d.relative ? "Speedup over plain decoding" : "Throughput") + " against concurrency on B200",
      subtitle: ROOFLINE_NOTE[d.roofline],
      panels: SEQUEL_DRAFTERS.map(function (key) {
        var q = parts[key];
        return {panelTitle: spec.drafters[key], size: CONCURRENCY_PANEL, x: x, y: y,
                layers: perDrafterLayers(key, function () { return d.B; }, function (i) { return q.fixed[i]; },
                                         function () { return d.C; }, function (i) { return q.sim[i]; },
                                         d.B, q.policy, d.C, q.adaptive)};
      }),
      legend: perDrafterLegend()
    };
  };
  DRAW.throughput_tpot = function (d, p, spec) {
    var x = {label: spec.x.label, scale: "log", min: d.x_limits[0], max: d.x_limits[1]};
    var y = {label: spec.y.label, scale: "log", min: d.y_limits[0], max: d.y_limits[1]};
    return {
      title: "Throughput against latency on B200; dotted: constant concurrency",
      subtitle: ROOFLINE_NOTE[d.roofline] + ", " + d.acceptance + " acceptance",
      panels: SEQUEL_DRAFTERS.map(function (key) {
        var o = d.drafters[key], rows = SQ.grid.drafters[key], layers = [];
        d.C.forEach(function (c, j) {
          layers.push({type: "line", x: d.tau_ms, y: d.contours[j], color: C.ridge, width: 0.8, dash: "1.5,3"});
          var xIn = d.x_limits[0] * 1.12, yIn = F.closed_loop_throughput(c, xIn / 1e3);
          if (yIn > d.y_limits[1] / 1.25) { yIn = d.y_limits[1] / 1.25; xIn = F.time_per_output_token(c, yIn) * 1e3; }
          if (xIn < d.x_limits[1]) { layers.push({type: "label", x: xIn, y: yIn, text: fmtInt(c), color: C.ridge}); }
        });
        layers = layers.concat(perDrafterLayers(key, function (i) { return o.tpot_ms[i]; }, function (i) { return o.throughput[i]; },
                                                function (i) { return o.simulated_tpot_ms[i]; }, function (i) { return rows.goodput[i]; },
                                                o.policy_tpot_ms, o.policy, o.adaptive_tpot_ms, rows.adaptive_goodput));
        return {panelTitle: spec.drafters[key], size: CONCURRENCY_PANEL, x: x, y: y, layers: layers};
      }),
      legend: perDrafterLegend()
    };
  };
  DRAW.pricing_ratio = function (d, p, spec) {
    var layers = [{type: "hline", y: 1, color: C.ridge, dash: true, label: "the rules agree", anchor: "start"}], legend = [];
    d.widths.forEach(function (t, i) {
      var color = STYLE.cycle[i % STYLE.cycle.length];
      layers.push({type: "line", x: d.B, y: d.ratio[i], color: color});
      legend.push({label: "T = " + t, color: color, kind: "line"});
    });
    return {
      title: "Two ways to price a step: " + d.model + " on " + d.hardware, subtitle: "S = " + fmtInt(d.S),
      x: spec.x, y: {label: spec.y.label, scale: "linear", min: 0.95, max: Math.max(1.2, niceCeiling(1.04 * maxOf(flat(d.ratio))))},
      layers: layers, legend: legend
    };
  };
  DRAW.pricing_gamma = function (d, p, spec) {
    var rows = SQ.grid.drafters[d.drafter], worst = 0, gammaLayers = [], lossLayers = [];
    var x = {label: spec.x.label, scale: "log", base: 2, min: spec.x.min / 1.25, max: spec.x.max * 1.25};
    RULES.forEach(function (rule) {
      var dash = rule === "per-component";
      gammaLayers.push({type: "line", x: d.B, y: d.gamma_star[rule], color: C[rule], step: true, dash: dash});
      lossLayers.push({type: "line", x: d.C, y: scaled(d.shortfall[rule], 100), color: C[rule], dash: dash, markers: true});
      worst = Math.max(worst, maxOf(d.shortfall[rule]));
    });
    gammaLayers.push({type: "points", x: d.C, y: d.simulated_best, color: C.total, hollow: true, size: 4});
    return {
      title: "What the pricing rule does to " + spec.drafters[d.drafter] + "'s \u03b3*",
      subtitle: d.acceptance + " acceptance; right: the simulator's throughput lost at each rule's \u03b3*",
      panels: [
        {panelTitle: "draft length \u03b3*", size: CONCURRENCY_PANEL, x: x, layers: gammaLayers,
         y: {label: "draft length \u03b3*", scale: "linear", min: 0, max: rows.gamma_max + 1, integer: true}},
        {panelTitle: "throughput lost", size: CONCURRENCY_PANEL, x: x, layers: lossLayers,
         y: {label: "% of the best fixed \u03b3", scale: "linear", min: -0.5, max: Math.max(5, niceCeiling(110 * worst))}}
      ],
      legend: [{label: RULE_LABEL.aggregate, color: C.aggregate, kind: "line"},
               {label: RULE_LABEL["per-component"], color: C["per-component"], kind: "dash"},
               {label: "the simulator's best fixed \u03b3", color: C.total, kind: "ring"}]
    };
  };

  // --- a small SVG plotter -------------------------------------------------------

  var W = 640, H = 360, PAD = {l: 64, r: 14, t: 12, b: 46};

  function el(name, attrs, parent) {
    var node = document.createElementNS(SVGNS, name);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (parent) { parent.appendChild(node); }
    return node;
  }
  function scaleOf(axis, lo, hi) {
    if (axis.scale === "log") {
      var a = Math.log10(axis.min), b = Math.log10(axis.max);
      return function (v) { return lo + (Math.log10(v) - a) / (b - a) * (hi - lo); };
    }
    return function (v) { return lo + (v - axis.min) / (axis.max - axis.min) * (hi - lo); };
  }
  function ticksOf(axis) {
    var out = [];
    if (axis.scale === "log") {
      var base = axis.base || 10, lb = Math.log(base);
      var every = axis.sparse ? 2 : 1, first = Math.ceil(Math.log(axis.min) / lb - 1e-9);
      for (var e = first; Math.pow(base, e) <= axis.max * (1 + 1e-9); e += every) {
        out.push(Math.pow(base, e));
      }
      return out;
    }
    var raw = (axis.max - axis.min) / 6, mag = Math.pow(10, Math.floor(Math.log10(raw))), step = mag * 10;
    [1, 2, 2.5, 5, 10].some(function (m) { if (m * mag >= raw) { step = m * mag; return true; } return false; });
    if (axis.integer) { step = Math.max(1, Math.round(step)); }
    for (var v = Math.ceil(axis.min / step) * step; v <= axis.max + step * 1e-9; v += step) { out.push(Math.abs(v) < step * 1e-9 ? 0 : v); }
    return out;
  }
  function tickLabel(v, axis) {
    if (axis.scale === "log" && axis.base === 2 && v >= 1024) { return (v / 1024) + "k"; }
    if (axis.scale === "log" && !axis.base && v >= 1000 && Number.isInteger(v / 1000)) { return (v / 1000) + "k"; }
    if (Number.isInteger(v)) { return v.toLocaleString("en-US"); }
    return String(+v.toPrecision(4));
  }
  function pathOf(xs, ys, sx, sy, step) {
    var d = "", prev = null;
    for (var i = 0; i < xs.length; i++) {
      if (!isFinite(ys[i])) { prev = null; continue; }
      var px = sx(xs[i]), py = sy(ys[i]);
      if (prev === null) { d += "M" + px.toFixed(2) + "," + py.toFixed(2); }
      else if (step) {
        var mid = ((prev[0] + px) / 2).toFixed(2);
        d += "H" + mid + "V" + py.toFixed(2) + "H" + px.toFixed(2);
      } else { d += "L" + px.toFixed(2) + "," + py.toFixed(2); }
      prev = [px, py];
    }
    return d;
  }

  function cellEdges(values, scale) {
    var px = values.map(scale), out = [1.5 * px[0] - 0.5 * px[1]];
    for (var i = 1; i < px.length; i++) { out.push((px[i - 1] + px[i]) / 2); }
    out.push(1.5 * px[px.length - 1] - 0.5 * px[px.length - 2]);
    return out;
  }

  var clipCount = 0;
  function render(svg, fig) {
    while (svg.firstChild) { svg.removeChild(svg.firstChild); }
    var size = fig.size || {w: W, h: H}, top = fig.panelTitle ? PAD.t + 16 : PAD.t;
    var x0 = PAD.l, x1 = size.w - PAD.r, y0 = size.h - PAD.b, y1 = top;
    if (fig.panelTitle) {
      el("text", {"class": "speclib-label", x: (x0 + x1) / 2, y: 14, "text-anchor": "middle"}, svg).textContent = fig.panelTitle;
    }
    var sx = scaleOf(fig.x, x0, x1), sy = scaleOf(fig.y, y0, y1);
    var clipId = svg.getAttribute("data-clip");
    if (!clipId) { clipId = "speclib-clip-" + (++clipCount); svg.setAttribute("data-clip", clipId); }
    var defs = el("defs", {}, svg), clip = el("clipPath", {id: clipId}, defs);
    el("rect", {x: x0, y: y1, width: x1 - x0, height: y0 - y1}, clip);
    // Diagonal hatching for the batches that cannot fit in HBM, as the static figure draws them.
    var hatchId = clipId + "-hatch", hatch = el("pattern", {id: hatchId, width: 6, height: 6,
      patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)"}, defs);
    el("line", {x1: 0, y1: 0, x2: 0, y2: 6, stroke: C.memory, "stroke-width": 1}, hatch);

    var grid = el("g", {"class": fig.noGrid ? "speclib-grid speclib-nogrid" : "speclib-grid"}, svg);
    ticksOf(fig.x).forEach(function (v) {
      var px = sx(v).toFixed(2);
      el("line", {x1: px, x2: px, y1: y0, y2: y1}, grid);
      el("text", {x: px, y: y0 + 16, "text-anchor": "middle"}, grid).textContent = tickLabel(v, fig.x);
    });
    ticksOf(fig.y).forEach(function (v) {
      var py = sy(v).toFixed(2);
      el("line", {x1: x0, x2: x1, y1: py, y2: py}, grid);
      el("text", {x: x0 - 6, y: py, "text-anchor": "end", dy: "0.32em"}, grid).textContent = tickLabel(v, fig.y);
    });
    el("path", {"class": "speclib-axes", d: "M" + x0 + "," + y1 + "V" + y0 + "H" + x1}, svg);
    el("text", {"class": "speclib-label", x: (x0 + x1) / 2, y: size.h - 8, "text-anchor": "middle"}, svg).textContent = fig.x.label;
    el("text", {"class": "speclib-label", x: 0, y: 0, "text-anchor": "middle",
                transform: "translate(14," + ((y0 + y1) / 2) + ") rotate(-90)"}, svg).textContent = fig.y.label;

    var plot = el("g", {"clip-path": "url(#" + clipId + ")"}, svg);
    fig.layers.forEach(function (layer) {
      if (layer.type === "area") {
        var where = layer.where, i = 0, n = layer.x.length;
        while (i < n) {  // one polygon per run where the band applies
          if (where && !where[i]) { i++; continue; }
          var j = i;
          while (j + 1 < n && (!where || where[j + 1])) { j++; }
          var top = "", base = "";
          for (var k = i; k <= j; k++) {
            top += (k === i ? "M" : "L") + sx(layer.x[k]).toFixed(2) + "," + sy(layer.y1[k]).toFixed(2);
          }
          for (k = j; k >= i; k--) {
            base += "L" + sx(layer.x[k]).toFixed(2) + "," + (layer.y0 ? sy(layer.y0[k]) : y0).toFixed(2);
          }
          el("path", {d: top + base + "Z", fill: layer.color, "fill-opacity": layer.opacity, stroke: "none"}, plot);
          i = j + 1;
        }
      } else if (layer.type === "heatmap") {
        // Cells reach halfway (in log) to their neighbours; equal runs along a
        // row are merged into one rectangle to keep the SVG small.
        var xe = cellEdges(layer.x, sx), ye = cellEdges(layer.y, sy);
        layer.z.forEach(function (row, r) {
          var c0 = 0;
          for (var c = 1; c <= row.length; c++) {
            if (c < row.length && row[c] === row[c0]) { continue; }
            el("rect", {x: xe[c0].toFixed(2), y: ye[r + 1].toFixed(2), width: (xe[c] - xe[c0] + 0.3).toFixed(2),
                        height: (ye[r] - ye[r + 1] + 0.3).toFixed(2), fill: layer.color(row[c0])}, plot);
            c0 = c;
          }
        });
      } else if (layer.type === "vband") {
        var a = sx(layer.x0), b = sx(layer.x1);
        el("rect", {x: a.toFixed(2), y: y1, width: Math.max(b - a, 1).toFixed(2), height: y0 - y1,
                    fill: layer.color, "fill-opacity": layer.opacity}, plot);
        if (layer.hatch) {
          el("rect", {x: a.toFixed(2), y: y1, width: Math.max(b - a, 1).toFixed(2), height: y0 - y1,
                      fill: "url(#" + hatchId + ")", "class": "speclib-memory"}, plot);
        }
      } else if (layer.type === "rowbands") {
        // Per row of a heatmap, from a column position out to the right edge (hatched).
        var rxe = cellEdges(layer.x, sx), rye = cellEdges(layer.y, sy), right = rxe[rxe.length - 1];
        layer.from.forEach(function (x, r) {
          if (x === null || !isFinite(x) || x >= layer.x[layer.x.length - 1]) { return; }
          var left = Math.max(rxe[0], Math.min(right, sx(Math.max(x, layer.x[0]))));
          var attrs = {x: left.toFixed(2), y: rye[r + 1].toFixed(2), width: (right - left).toFixed(2),
                       height: (rye[r] - rye[r + 1] + 0.3).toFixed(2)};
          el("rect", Object.assign({fill: layer.color, "fill-opacity": layer.opacity}, attrs), plot);
          el("rect", Object.assign({fill: "url(#" + hatchId + ")", "class": "speclib-memory"}, attrs), plot);
        });
      } else if (layer.type === "hline") {
        var py = sy(layer.y).toFixed(2);
        el("line", {x1: x0, x2: x1, y1: py, y2: py, stroke: layer.color, "stroke-width": 1.2,
                    "stroke-dasharray": layer.dash ? "5,4" : "none"}, plot);
        if (layer.label) {
          var start = layer.anchor === "start";
          el("text", {x: start ? x0 + 6 : x1 - 4, y: sy(layer.y) - 4, "text-anchor": start ? "start" : "end",
                      fill: layer.color, "class": "speclib-note"}, plot).textContent = layer.label;
        }
      } else if (layer.type === "line") {
        el("path", {d: pathOf(layer.x, layer.y, sx, sy, layer.step), fill: "none", stroke: layer.color,
                    "stroke-width": layer.width || 2, "stroke-linejoin": "round",
                    "stroke-dasharray": typeof layer.dash === "string" ? layer.dash : (layer.dash ? "6,4" : "none")}, plot);
        if (layer.markers) {
          layer.x.forEach(function (xv, i) {
            el("circle", {cx: sx(xv).toFixed(2), cy: sy(layer.y[i]).toFixed(2), r: 2, fill: layer.color}, plot);
          });
        }
      } else if (layer.type === "star") {
        el("text", {x: sx(layer.x).toFixed(2), y: sy(layer.y).toFixed(2), "text-anchor": "middle", dy: "0.35em",
                    fill: layer.color, stroke: "#000", "stroke-width": 0.5, "class": "speclib-star"}, plot).textContent = "\u2605";
      } else if (layer.type === "points") {
        // Markers only: circle (default), square or cross; hollow ones are rings.
        var r = layer.size || 3;
        layer.x.forEach(function (xv, i) {
          var yv = layer.y[i];
          if (!isFinite(xv) || !isFinite(yv) || (xv <= 0 && fig.x.scale === "log") ||
              (yv <= 0 && fig.y.scale === "log")) { return; }
          var cx = sx(xv), cy = sy(yv), paint = layer.hollow ? {fill: "none", stroke: layer.color, "stroke-width": 1.4}
            : {fill: layer.color, stroke: "none"};
          if (layer.marker === "cross") {
            el("path", {d: "M" + (cx - r) + "," + (cy - r) + "L" + (cx + r) + "," + (cy + r) + "M" + (cx - r) + "," +
                        (cy + r) + "L" + (cx + r) + "," + (cy - r), stroke: layer.color, "stroke-width": 1.8}, plot);
          } else if (layer.marker === "square") {
            el("rect", Object.assign({x: (cx - r).toFixed(2), y: (cy - r).toFixed(2), width: 2 * r, height: 2 * r}, paint), plot);
          } else {
            el("circle", Object.assign({cx: cx.toFixed(2), cy: cy.toFixed(2), r: r}, paint), plot);
          }
        });
      } else if (layer.type === "vline") {
        var vx = sx(layer.x).toFixed(2);
        el("line", {x1: vx, x2: vx, y1: y0, y2: y1, stroke: layer.color, "stroke-width": 1,
                    "stroke-dasharray": layer.dash ? "2,3" : "none"}, plot);
      } else if (layer.type === "label") {
        el("text", {x: sx(layer.x).toFixed(2), y: sy(layer.y).toFixed(2), dy: "0.35em", "text-anchor": layer.anchor || "start",
                    fill: layer.color, "class": "speclib-note"}, plot).textContent = layer.text;
      } else if (layer.type === "text") {
        el("text", {x: sx(layer.x).toFixed(2), y: (y0 + (y1 - y0) * layer.yFrac).toFixed(2), dy: "0.8em",
                    "text-anchor": layer.anchor || "start", fill: layer.color, "class": "speclib-note"}, plot).textContent = layer.text;
      }
    });
  }

  function renderLegend(box, items) {
    box.textContent = "";
    items.forEach(function (item) {
      var entry = document.createElement("span");
      entry.className = "speclib-legend-item";
      var swatch = document.createElement("span");
      swatch.className = "speclib-swatch speclib-swatch-" + item.kind;
      swatch.style.setProperty("--swatch", item.color);
      entry.appendChild(swatch);
      entry.appendChild(document.createTextNode(item.label));
      box.appendChild(entry);
    });
  }

  // --- controls and mounting ------------------------------------------------------

  function controlValue(control, input) {
    if (control.kind === "checkbox") { return input.checked; }
    if (control.kind === "select") { return input.value; }
    return parseFloat(input.value);
  }
  function paramOf(control, value) {
    if (control.kind === "choice") { return control.options[value]; }  // a slider over a list of values
    return control.map ? seqLength(value, control.map) : value;
  }
  function shown(control, value) {
    var v = paramOf(control, value);
    if (control.kind === "choice") { return fmtInt(v); }
    if (control.format === "percent") { return fmtPct(v); }
    if (control.format === "tokens") { return fmtInt(v) + " tokens"; }
    if (control.format === "int") { return String(v); }
    return String(v);
  }

  // One SVG per panel (or a table), reused across redraws.
  function drawInto(plots, fig) {
    if (fig.table) {
      plots.textContent = "";
      plots.appendChild(fig.table);
      return;
    }
    var panels = fig.panels || [fig], svgs = plots.querySelectorAll("svg.speclib-svg");
    if (svgs.length !== panels.length) {
      plots.textContent = "";
      plots.classList.toggle("speclib-multi", panels.length > 1);
      panels.forEach(function (panel) {
        var size = panel.size || {w: W, h: H};
        el("svg", {viewBox: "0 0 " + size.w + " " + size.h, role: "img", "class": "speclib-svg"}, plots);
      });
      svgs = plots.querySelectorAll("svg.speclib-svg");
    }
    panels.forEach(function (panel, i) {
      svgs[i].setAttribute("aria-label", (panel.panelTitle || fig.title) + "; " + fig.subtitle);
      render(svgs[i], panel);
    });
  }

  var counter = 0;
  function mount(cell, name) {
    var spec = M.figures[name];
    var id = "speclib-live-" + (++counter);
    var box = document.createElement("div");
    box.className = "speclib-live";
    box.setAttribute("data-speclib-figure", name);
    var form = document.createElement("form");
    form.className = "speclib-controls";
    form.addEventListener("submit", function (e) { e.preventDefault(); });
    var figure = document.createElement("div");
    figure.className = "speclib-figure";
    var title = document.createElement("div");
    title.className = "speclib-title";
    var plots = document.createElement("div");
    plots.className = "speclib-plots";
    var legend = document.createElement("div");
    legend.className = "speclib-legend";
    figure.appendChild(title);
    figure.appendChild(plots);
    figure.appendChild(legend);

    var kind = spec.kind || name;
    var instance = {name: name, kind: kind, id: id, spec: spec, params: {model: spec.model || K.model}, data: null,
                    redraws: 0, lastRedrawMs: null, element: box};
    var inputs = {};
    spec.controls.forEach(function (control) {
      var row = document.createElement("label");
      row.className = "speclib-control speclib-control-" + control.kind;
      var text = document.createElement("span");
      text.className = "speclib-control-label";
      text.textContent = control.label;
      var input, output = document.createElement("output");
      if (control.kind === "select") {
        input = document.createElement("select");
        control.options.forEach(function (opt) {
          var o = document.createElement("option");
          // an option is a value, or {value, label} to show other text
          o.value = opt.value === undefined ? opt : opt.value;
          o.textContent = opt.label === undefined ? opt : opt.label;
          input.appendChild(o);
        });
        input.value = control.value;
      } else {
        input = document.createElement("input");
        input.type = control.kind === "choice" ? "range" : control.kind;
        if (control.kind === "checkbox") {
          input.checked = !!control.value;
        } else if (control.kind === "choice") {
          input.min = 0; input.max = control.options.length - 1; input.step = 1;
          input.value = control.options.indexOf(control.value);
        } else {
          input.min = control.min; input.max = control.max; input.step = control.step; input.value = control.value;
        }
      }
      input.name = control.name;
      input.setAttribute("data-control", control.name);
      row.appendChild(text);
      row.appendChild(input);
      var slider = control.kind === "range" || control.kind === "choice";
      if (slider) { row.appendChild(output); }
      form.appendChild(row);
      inputs[control.name] = {control: control, input: input, output: output, slider: slider};
      input.addEventListener(slider ? "input" : "change", function () { update(); });
    });

    function update() {
      var t0 = performance.now();
      Object.keys(inputs).forEach(function (key) {
        var c = inputs[key], value = controlValue(c.control, c.input);
        instance.params[c.control.param] = paramOf(c.control, value);
        if (c.slider) { c.output.textContent = shown(c.control, value); }
      });
      instance.data = COMPUTE[kind](instance.params, spec);
      var fig = DRAW[kind](instance.data, instance.params, spec);
      title.textContent = "";
      var strong = document.createElement("strong");
      strong.textContent = fig.title;
      title.appendChild(strong);
      title.appendChild(document.createTextNode(" \u2014 " + fig.subtitle));
      if (ENABLE[kind]) { ENABLE[kind](instance.params, inputs); }
      drawInto(plots, fig);
      renderLegend(legend, fig.legend || []);
      instance.redraws += 1;
      instance.lastRedrawMs = performance.now() - t0;
      box.dispatchEvent(new CustomEvent("speclib:redraw", {bubbles: true}));
    }
    instance.update = update;

    var note = document.createElement("p");
    note.className = "speclib-note-line";
    note.textContent = "Live figure: computed in your browser from speclib's formulas (generated from its sympy expressions).";
    box.appendChild(form);
    box.appendChild(figure);
    box.appendChild(note);
    cell.appendChild(box);
    cell.classList.add("speclib-live-active");
    update();
    return instance;
  }

  function mountAll() {
    var live = window.speclibLive = window.speclibLive || {instances: []};
    live.compute = COMPUTE;  // what each figure computes, by kind (tests call it without a page)
    document.querySelectorAll("[class*='tag_figure-']").forEach(function (cell) {
      if (cell.classList.contains("speclib-live-active")) { return; }
      cell.classList.forEach(function (cls) {
        var name = cls.indexOf("tag_figure-") === 0 ? cls.slice("tag_figure-".length) : null;
        if (name && M.figures[name] && COMPUTE[M.figures[name].kind || name]) { live.instances.push(mount(cell, name)); }
      });
    });
    live.ready = true;
  }

  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", mountAll); }
  else { mountAll(); }
})();
