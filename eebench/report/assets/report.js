/* eebench report: draws the tables, the papers' figures and the replays from the JSON blocks of this page.
   Vanilla JS and inline SVG only: the file opens from disk with no network. */
"use strict";
(function () {
  const DATA = JSON.parse(document.getElementById("eeb-data").textContent);
  const NS = "http://www.w3.org/2000/svg";
  // Okabe-Ito: distinguishable with every common colour-vision deficiency
  const PALETTE = ["#0072B2", "#D55E00", "#009E73", "#E69F00", "#CC79A7", "#56B4E9", "#000000", "#F0E442"];
  const CASES = {1: ["explore", "#0072B2"], 2: ["goal pending", "#D55E00"], 3: ["exploit", "#009E73"],
                 4: ["either", "#E69F00"]};
  const NODE_FILL = ["#ffffff", "#F0E442", "#56B4E9"];   // undiscovered, discovered, achieved
  const NODE_STATUS = ["undiscovered", "discovered", "achieved"];
  const app = document.getElementById("app");

  // -- small helpers ----------------------------------------------------------------------------------
  function el(tag, attrs, text) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function sv(tag, attrs, text) {
    const node = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function fmt(v, digits) {
    if (v === null || v === undefined || Number.isNaN(v)) return "\u2013";
    if (Math.abs(v) >= 1000) return v.toLocaleString("en-US", {maximumFractionDigits: 0});
    return v.toFixed(digits === undefined ? 3 : digits);
  }
  function label(v) { return v === null || v === undefined ? "\u2013" : String(v); }
  // a name drawn in a figure, by the plots' rule (figures.py label and labels): control characters escaped,
  // shortened in the middle past DATA.label_chars characters (by code point: an emoji is not cut in two), and
  // told apart by #2, #3 where names of one kind (models, prompts) shorten alike; one name keeps its label on the
  // whole page. Whole in its tooltip.
  const ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r"};
  const shortened = {model: [new Map(), new Set()], prompt: [new Map(), new Set()]};
  function short(v, kind) {
    const name = label(v), [of, taken] = shortened[kind || "model"];
    if (of.has(name)) return of.get(name);
    const text = name.replace(/[\x00-\x1f\x7f-\x9f\u2028\u2029]/g, (ch) => ESCAPES[ch] ||
      (ch.charCodeAt(0) < 0x100 ? "\\x" + ch.charCodeAt(0).toString(16).padStart(2, "0")
                                : "\\u" + ch.charCodeAt(0).toString(16).padStart(4, "0")));
    const chars = Array.from(text), n = DATA.label_chars, head = Math.floor((n - 1) / 2);
    const base = chars.length <= n ? text :
      chars.slice(0, head).join("") + "\u2026" + chars.slice(chars.length - (n - 1 - head)).join("");
    let drawn = base;
    for (let k = 2; taken.has(drawn); k++) drawn = `${base} #${k}`;
    taken.add(drawn); of.set(name, drawn);
    return drawn;
  }
  function section(id, title, help) {
    const s = el("section", {id: id});
    s.appendChild(el("h2", {}, title));
    if (help) s.appendChild(el("p", {class: "help"}, help));
    app.appendChild(s);
    return s;
  }
  function linear(d0, d1, r0, r1) {
    const k = d1 === d0 ? 0 : (r1 - r0) / (d1 - d0);
    return (v) => r0 + (v - d0) * k;
  }
  // the largest of many values by a loop: spreading a 100,000-step array into Math.max overflows the call stack
  function maxOf(values, start) { let m = start; for (const v of values) if (v !== null && v > m) m = v; return m; }
  function niceMax(v) { if (!(v > 0)) return 1; const p = Math.pow(10, Math.floor(Math.log10(v))); return Math.ceil(v / p) * p; }
  function ticks(lo, hi, n) {
    const raw = (hi - lo) / n, p = Math.pow(10, Math.floor(Math.log10(raw || 1)));
    const step = [1, 2, 2.5, 5, 10].map((m) => m * p).find((v) => v >= raw) || 1; const out = [];
    for (let v = Math.ceil(lo / step) * step; v <= hi + 1e-9; v += step) out.push(+v.toFixed(10));
    return out;
  }
  // axes with labels, in a plot area [x0, x1] x [y0, y1] (y0 at the top)
  function axes(svg, box, xs, ys, xLabel, yLabel, xFmt) {
    const g = sv("g", {class: "axis"});
    for (const t of ys.ticks) {
      const y = ys.scale(t);
      g.appendChild(sv("line", {x1: box.x0, x2: box.x1, y1: y, y2: y, class: "grid"}));
      g.appendChild(sv("text", {x: box.x0 - 6, y: y + 4, "text-anchor": "end"}, fmt(t, t % 1 ? 2 : 0)));
    }
    for (const t of xs.ticks) {
      const x = xs.scale(t);
      g.appendChild(sv("line", {x1: x, x2: x, y1: box.y1, y2: box.y1 + 5}));
      g.appendChild(sv("text", {x: x, y: box.y1 + 18, "text-anchor": "middle"}, xFmt ? xFmt(t) : fmt(t, t % 1 ? 2 : 0)));
    }
    g.appendChild(sv("path", {d: `M${box.x0},${box.y0}V${box.y1}H${box.x1}`, fill: "none"}));
    g.appendChild(sv("text", {x: (box.x0 + box.x1) / 2, y: box.y1 + 36, "text-anchor": "middle"}, xLabel));
    const yl = sv("text", {x: 0, y: 0, "text-anchor": "middle",
                           transform: `translate(${box.x0 - 42},${(box.y0 + box.y1) / 2}) rotate(-90)`}, yLabel);
    g.appendChild(yl);
    svg.appendChild(g);
  }
  // Figure 1's points: models with a success rate and an error (a rooms model has neither); a colour each
  const drawnModels = (DATA.figure1.points || []).filter((p) => p.success && (p.explore || p.exploit));
  // one colour per model in every figure: Figure 1's models first, then each model another figure adds, the next
  // colour (a Map: a model named "constructor" is no Object's property)
  const colours = new Map();
  function colourOf(model) {
    if (!colours.has(model)) colours.set(model, PALETTE[colours.size % PALETTE.length]);
    return colours.get(model);
  }
  drawnModels.forEach((p) => colourOf(p.model));

  // -- header -----------------------------------------------------------------------------------------
  function header() {
    const m = DATA.meta || {};
    document.getElementById("subtitle").textContent =
      `${DATA.trajectories.length.toLocaleString("en-US")} trajectories from ${DATA.db}` +
      (DATA.where ? ` where ${DATA.where}` : "") +
      ` \u00b7 results schema ${m.schema_version || "?"}, metric ${m.metric_version || "?"}, graded by eebench ` +
      `${m.eebench_version || "?"}` + (DATA.graded ? `, last on ${DATA.graded}` : "") +
      ` \u00b7 report by eebench ${DATA.version}`;
    const notes = document.getElementById("notes");
    for (const n of DATA.notes) notes.appendChild(el("li", {}, n));
  }

  // -- the summary table ------------------------------------------------------------------------------
  function summaryTable() {
    const b = DATA.bootstrap;
    const s = section("summary", "Agents, models and prompts",
      `Means over episodes; below each, its ${Math.round(b.confidence * 100)}% percentile-bootstrap interval ` +
      `(${b.resamples} resamples of the episodes, seed ${b.seed}). Click a column to sort.`);
    const wrap = el("div", {class: "scroll"});
    const table = el("table", {id: "summary-table"});
    const cols = [
      {key: "agent_name", title: "agent", get: (r) => r.labels.agent_name},
      {key: "model", title: "model", get: (r) => r.labels.model},
      {key: "prompt", title: "prompt", get: (r) => r.labels.prompt},
      {key: "harness", title: "harness", get: (r) => r.labels.harness},
      {key: "episodes", title: "trajectories", num: true, get: (r) => r.episodes},   // the view's `episodes`
    ];
    for (const m of DATA.metrics) {
      cols.push({key: m.column, title: m.label + (m.better === "higher" ? " \u2191" : " \u2193"), num: true, est: true,
                 get: (r) => (r.est[m.column] ? r.est[m.column][0] : null)});
    }
    cols.push({key: "steps_success", title: "steps (success)", num: true, get: (r) => r.steps_success});
    const thead = el("thead"); const hr = el("tr");
    cols.forEach((c) => {
      const th = el("th", {"data-key": c.key, scope: "col", title: "sort by " + c.title}, c.title);
      th.addEventListener("click", () => sortBy(c, th));
      hr.appendChild(th);
    });
    thead.appendChild(hr); table.appendChild(thead);
    const tbody = el("tbody"); table.appendChild(tbody);
    let rows = DATA.summary.slice();
    function draw() {
      tbody.textContent = "";
      for (const r of rows) {
        const tr = el("tr", {class: "summary-row"});
        for (const c of cols) {
          if (!c.num) { tr.appendChild(el("td", {"data-key": c.key}, label(c.get(r)))); continue; }
          const td = el("td", {class: "num", "data-key": c.key});
          const v = c.get(r);
          td.appendChild(document.createTextNode(c.key === "episodes" ? String(v) : fmt(v, c.key === "steps_success" ? 1 : 3)));
          if (c.est && r.est[c.key]) {
            const e = r.est[c.key];
            td.setAttribute("data-value", String(e[0]));
            td.appendChild(el("span", {class: "ci"}, `[${fmt(e[1])}, ${fmt(e[2])}]`));
          }
          tr.appendChild(td);
        }
        tbody.appendChild(tr);
      }
    }
    function sortBy(c, th) {
      const down = th.getAttribute("aria-sort") === "ascending";
      table.querySelectorAll("th").forEach((h) => h.removeAttribute("aria-sort"));
      th.setAttribute("aria-sort", down ? "descending" : "ascending");
      const sign = down ? -1 : 1;
      rows.sort((a, b2) => {
        const x = c.get(a), y = c.get(b2);
        if (x === null || x === undefined) return (y === null || y === undefined) ? 0 : 1;   // missing values last
        if (y === null || y === undefined) return -1;
        return (c.num ? x - y : String(x).localeCompare(String(y))) * sign;
      });
      draw();
    }
    draw();
    wrap.appendChild(table); s.appendChild(wrap);
  }

  // -- Figure 1 (Park et al.): success rate against log error, one point per model --------------------
  function scatter(which, title) {
    const f = DATA.figure1, W = 560, H = 380;
    const box = {x0: 64, x1: W - 16, y0: 48, y1: H - 52};
    const svg = sv("svg", {id: "fig1-" + which, viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": title});
    svg.appendChild(sv("text", {x: box.x0, y: 16, "font-weight": 600}, title));
    const pts = f.points.filter((p) => p[which] && p.success);
    const lx = (v) => Math.log10(Math.max(v, f.floor));
    let lo = Math.log10(f.floor), hi = 0;
    for (const p of pts) { hi = Math.max(hi, lx(p[which][2])); }
    lo = Math.floor(lo); hi = Math.ceil(hi);
    const xTicks = []; for (let t = lo; t <= hi; t++) xTicks.push(t);
    const xs = {scale: linear(lo, hi, box.x0, box.x1), ticks: xTicks};
    const ys = {scale: linear(-0.03, 1.05, box.y1, box.y0), ticks: [0, 0.25, 0.5, 0.75, 1]};
    axes(svg, box, xs, ys, (which === "explore" ? "exploration" : "exploitation") + " error (log scale)",
         "success rate", (t) => (t === Math.log10(f.floor) ? "\u2264" : "") + "10" + supers(t));
    const fit = f[which + "_fit"];
    if (fit) {
      const y = (x) => fit.slope * x + fit.intercept;
      const clip = sv("clipPath", {id: "clip-" + which});
      clip.appendChild(sv("rect", {x: box.x0, y: box.y0, width: box.x1 - box.x0, height: box.y1 - box.y0}));
      const defs = sv("defs"); defs.appendChild(clip); svg.appendChild(defs);
      svg.appendChild(sv("line", {class: "fit", x1: xs.scale(lo), y1: ys.scale(y(lo)), x2: xs.scale(hi),
                                  y2: ys.scale(y(hi)), "clip-path": `url(#clip-${which})`}));
      const r2 = fit.r2 === null ? "undefined" : fit.r2.toFixed(2);
      svg.appendChild(sv("text", {class: "fit-label", x: box.x0, y: 34, "text-anchor": "start"},
        `least squares: y = ${fit.slope.toFixed(2)} log10(x) + ${fit.intercept.toFixed(2)},  R\u00b2 = ${r2}  (n = ${fit.n})`));
    } else {
      svg.appendChild(sv("text", {class: "fit-label", x: box.x0, y: 34, "text-anchor": "start"},
        "no line: fewer than 3 models with an error above 0"));
    }
    for (const p of pts) {
      const e = p[which], s = p.success, colour = colourOf(p.model);
      const cx = xs.scale(lx(e[0])), cy = ys.scale(s[0]);
      const g = sv("g", {class: "point-group"});
      g.appendChild(sv("line", {x1: xs.scale(lx(e[1])), x2: xs.scale(lx(e[2])), y1: cy, y2: cy, stroke: colour}));
      g.appendChild(sv("line", {x1: cx, x2: cx, y1: ys.scale(s[1]), y2: ys.scale(s[2]), stroke: colour}));
      const atFloor = e[0] === 0;   // (an error above 0 is drawn where the line is fitted to it)
      const c = sv("circle", {class: "point", cx: cx, cy: cy, r: 6, fill: atFloor ? "#fff" : colour, stroke: colour,
                              "stroke-width": 2, "data-model": p.model});
      // each mean over the episodes that have the value (a rooms run has no success or errors of Park et al.'s)
      c.appendChild(sv("title", {}, `${p.model}: success ${fmt(s[0])} [${fmt(s[1])}, ${fmt(s[2])}] over ${s[3]} ` +
                                  `episodes, ${which} error ${fmt(e[0])} [${fmt(e[1])}, ${fmt(e[2])}] over ${e[3]} episodes` +
                                  (atFloor ? " (error 0: drawn at the axis floor, left out of the line)" : "")));
      g.appendChild(c);
      g.appendChild(sv("text", {class: "point-label", x: cx + 9, y: cy + 4, "font-size": 11}, short(p.model)));
      svg.appendChild(g);
    }
    return svg;
  }
  function supers(t) {
    const map = {"-": "\u207b", "0": "\u2070", "1": "\u00b9", "2": "\u00b2", "3": "\u00b3", "4": "\u2074",
                 "5": "\u2075", "6": "\u2076", "7": "\u2077", "8": "\u2078", "9": "\u2079"};
    return String(t).split("").map((ch) => map[ch] || ch).join("");
  }
  function legend(models) {
    const ul = el("ul", {class: "legend"});
    for (const m of models) {
      const li = el("li");
      li.appendChild(el("span", {class: "swatch", style: `background:${colourOf(m)}`}));
      li.appendChild(document.createTextNode(m));
      ul.appendChild(li);
    }
    return ul;
  }
  function figureOne() {
    if (!DATA.metrics.some((m) => m.column === "explore_error")) return;
    const s = section("figure1", "Success against errors (Park et al., Figure 1)",
      `One point per model (all its selected episodes): success rate against mean exploration and exploitation ` +
      `error on a log scale, with ${Math.round(DATA.bootstrap.confidence * 100)}% bootstrap intervals as whiskers. ` +
      `A model with error 0 is drawn hollow at the axis floor (${DATA.figure1.floor}) and left out of the ` +
      `least-squares line, which is fitted to success rate against log10 error.`);
    const figs = el("div", {class: "figs"});
    figs.appendChild(scatter("explore", "Exploration error"));
    figs.appendChild(scatter("exploit", "Exploitation error"));
    s.appendChild(figs);
    s.appendChild(legend(drawnModels.map((p) => p.model)));
  }

  // -- Figure 5 (Park et al.): prompts compared for one model ----------------------------------------
  function prompts() {
    const models = [...new Set(DATA.prompts.map((p) => p.model))];
    if (!models.length) return;
    const s = section("prompts", "Prompts compared for one model (Park et al., Figure 5)",
      "Mean per prompt with bootstrap intervals; choose the model.");
    const pick = el("select", {id: "prompt-model", "aria-label": "model"});
    for (const m of models) pick.appendChild(el("option", {value: m, title: m}, short(m)));
    pick.value = DATA.prompt_model || models[0];   // the one with the most prompts (chosen in data.py)
    s.appendChild(pick);
    const holder = el("div", {class: "figs"});
    s.appendChild(holder);
    function draw() {
      holder.textContent = "";
      const rows = DATA.prompts.filter((p) => p.model === pick.value);
      // a chart per metric the model has (a grid model has no gaps, a rooms model no success rate)
      for (const m of DATA.metrics.filter((m) => rows.some((r) => r.est[m.column]))) {
        const W = 380, H = 260, box = {x0: 56, x1: W - 10, y0: 30, y1: H - 48};
        const svg = sv("svg", {viewBox: `0 0 ${W} ${H}`, class: "prompt-chart", "aria-label": m.label});
        svg.appendChild(sv("text", {x: box.x0, y: 16, "font-weight": 600}, m.label));
        const top = niceMax(Math.max(1e-9, ...rows.map((r) => (r.est[m.column] ? r.est[m.column][2] : 0))));
        const ymax = top <= 1 && m.column !== "max_return" ? 1 : top;
        const ys = {scale: linear(0, ymax, box.y1, box.y0), ticks: ticks(0, ymax, 4)};
        const bw = (box.x1 - box.x0) / Math.max(rows.length, 1);
        axes(svg, box, {scale: (v) => v, ticks: []}, ys, "prompt", m.label);
        rows.forEach((r, i) => {
          const e = r.est[m.column]; const x = box.x0 + i * bw;
          svg.appendChild(sv("text", {x: x + bw / 2, y: box.y1 + 16, "text-anchor": "middle"}, short(r.prompt, "prompt")));
          if (!e) return;
          const bar = sv("rect", {class: "bar", x: x + bw * 0.15, width: bw * 0.7, y: ys.scale(e[0]),
                                  height: Math.max(0, box.y1 - ys.scale(e[0])), fill: PALETTE[i % PALETTE.length]});
          bar.appendChild(sv("title", {}, `${r.prompt}: ${fmt(e[0])} [${fmt(e[1])}, ${fmt(e[2])}], ${r.episodes} episodes`));
          svg.appendChild(bar);
          svg.appendChild(sv("line", {x1: x + bw / 2, x2: x + bw / 2, y1: ys.scale(e[1]), y2: ys.scale(e[2]),
                                      stroke: "#000", "stroke-width": 1.5}));
        });
        holder.appendChild(svg);
      }
    }
    pick.addEventListener("change", draw);
    draw();
  }

  // -- the trajectory list ---------------------------------------------------------------------------
  const PAGE = 100;
  function trajectoryList() {
    const s = section("trajectories", "Trajectories", "Click a row to replay it (its data is decoded only then).");
    const filter = el("input", {type: "search", id: "traj-filter", placeholder: "filter by id, agent, model, prompt, instance"});
    s.appendChild(filter);
    const wrap = el("div", {class: "scroll"});
    const table = el("table", {id: "traj-table"});
    const hr = el("tr");
    ["trajectory", "agent", "model", "prompt", "instance", "success", "steps", "explore err.", "exploit err.", "end"]
      .forEach((t) => hr.appendChild(el("th", {scope: "col"}, t)));
    const thead = el("thead"); thead.appendChild(hr); table.appendChild(thead);
    const tbody = el("tbody"); table.appendChild(tbody);
    wrap.appendChild(table); s.appendChild(wrap);
    const pager = el("div", {class: "pager"});
    const prev = el("button", {type: "button"}, "\u2190 previous"), next = el("button", {type: "button"}, "next \u2192");
    const where = el("span");
    pager.append(prev, where, next); s.appendChild(pager);
    let shown = DATA.trajectories.map((_, i) => i), page = 0;
    function draw() {
      tbody.textContent = "";
      for (const i of shown.slice(page * PAGE, (page + 1) * PAGE)) {
        const r = DATA.trajectories[i];
        const tr = el("tr", {"data-index": i});
        [r[0], r[1], r[2], r[3], r[4], r[5] === null ? null : r[5] ? "yes" : "no", r[6], fmt(r[7]), fmt(r[8]), r[9]]
          .forEach((v) => tr.appendChild(el("td", {}, label(v))));
        tr.addEventListener("click", () => openReplay(i));
        tbody.appendChild(tr);
      }
      const pages = Math.max(1, Math.ceil(shown.length / PAGE));
      where.textContent = `page ${page + 1} of ${pages} (${shown.length} trajectories)`;
      prev.disabled = page === 0; next.disabled = page >= pages - 1;
    }
    prev.addEventListener("click", () => { page--; draw(); });
    next.addEventListener("click", () => { page++; draw(); });
    filter.addEventListener("input", () => {
      const q = filter.value.trim().toLowerCase();
      shown = [];
      DATA.trajectories.forEach((r, i) => {
        if (!q || r.slice(0, 5).some((v) => v !== null && String(v).toLowerCase().includes(q))) shown.push(i);
      });
      page = 0; draw();
    });
    draw();
  }

  // -- the replay --------------------------------------------------------------------------------------
  let blocks = null;
  const decoded = new Map();
  async function loadReplay(i) {
    if (decoded.has(i)) return decoded.get(i);
    if (blocks === null) blocks = JSON.parse(document.getElementById("eeb-replays").textContent);
    const bytes = Uint8Array.from(atob(blocks[i]), (ch) => ch.charCodeAt(0));
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate"));
    const doc = JSON.parse(await new Response(stream).text());
    decoded.set(i, doc);
    return doc;
  }

  const R = {doc: null, k: 0, timer: null};
  function replaySection() {
    const s = section("replay", "Replay",
      "Grid worlds: the path up to the chosen step, each move coloured by its case (Park et al., Table 1), \u00d7 " +
      "where the step is an error; beside it the stale score, the cumulative errors and the case over time " +
      "(Figures 8-19). Rooms worlds: the path between rooms coloured by episode; beside it the returns, gaps and " +
      "coverage of each episode. Keys: \u2190 \u2192 one step, Home/End, space plays.");
    s.appendChild(el("p", {id: "replay-title", class: "empty"}, "Choose a trajectory in the list above."));
    const controls = el("div", {class: "controls", id: "replay-controls", hidden: ""});
    const buttons = [["first", "\u00ab first", "first step (Home)"], ["prev", "\u2039 step", "previous step (\u2190)"],
                     ["play", "play", "play (space)"], ["next", "step \u203a", "next step (\u2192)"],
                     ["last", "last \u00bb", "last step (End)"]];
    for (const [id, text, title] of buttons) controls.appendChild(el("button", {type: "button", id: id, title: title, "aria-label": title}, text));
    controls.appendChild(el("input", {type: "range", id: "slider", min: 0, max: 0, value: 0, "aria-label": "step"}));
    s.appendChild(controls);
    s.appendChild(el("div", {id: "step-info"}));
    const body = el("div", {id: "replay-body"});
    const mapWrap = el("div", {id: "map-wrap"});
    mapWrap.appendChild(sv("svg", {id: "map"}));
    mapWrap.appendChild(el("ul", {class: "legend", id: "map-legend"}));
    mapWrap.appendChild(el("div", {id: "step-text"}));
    body.appendChild(mapWrap);
    body.appendChild(el("div", {id: "charts"}));
    s.appendChild(body);
    document.getElementById("first").addEventListener("click", () => go(0));
    document.getElementById("prev").addEventListener("click", () => go(R.k - 1));
    document.getElementById("next").addEventListener("click", () => go(R.k + 1));
    document.getElementById("last").addEventListener("click", () => go(Infinity));
    document.getElementById("play").addEventListener("click", togglePlay);
    const slider = document.getElementById("slider");
    slider.addEventListener("input", () => go(+slider.value));
    document.addEventListener("keydown", (ev) => {
      if (!R.doc || (ev.target && ["INPUT", "SELECT", "TEXTAREA"].includes(ev.target.tagName) && ev.target.id !== "slider")) return;
      const moves = {ArrowRight: R.k + 1, ArrowLeft: R.k - 1, Home: 0, End: Infinity};
      if (ev.key in moves) { ev.preventDefault(); go(moves[ev.key]); } else if (ev.key === " ") { ev.preventDefault(); togglePlay(); }
    });
  }
  function togglePlay() {
    const b = document.getElementById("play");
    if (R.timer) { clearInterval(R.timer); R.timer = null; b.textContent = "play"; return; }
    if (R.k >= R.doc.x.length) go(0);
    b.textContent = "pause";
    R.timer = setInterval(() => { if (R.k >= R.doc.x.length) togglePlay(); else go(R.k + 1); }, 120);
  }

  async function openReplay(i) {
    const doc = await loadReplay(i);
    if (R.timer) togglePlay();
    R.doc = doc; R.index = i;
    document.querySelectorAll("#traj-table tr.open").forEach((t) => t.classList.remove("open"));
    const row = document.querySelector(`#traj-table tr[data-index="${i}"]`); if (row) row.classList.add("open");
    const r = DATA.trajectories[i];
    const title = document.getElementById("replay-title");
    title.className = ""; title.textContent =
      `${r[0]} \u2014 ${label(r[2])}, prompt ${label(r[3])}, instance ${r[4]}: ` +
      `${r[5] === null ? "" : r[5] ? "success " : "no success "}in ${r[6]} steps (${r[9]})`;
    document.getElementById("replay-controls").hidden = false;
    const slider = document.getElementById("slider");
    slider.max = String(doc.x.length);
    if (doc.env === "rooms") { drawRooms(doc); drawEpisodeCharts(doc); }
    else if (doc.env === "logged") { drawStates(doc); drawStateCharts(doc); }
    else { drawMap(doc); drawCharts(doc); }
    history.replaceState(null, "", "#t=" + encodeURIComponent(r[0]));
    go(doc.x.length);
    document.getElementById("replay").scrollIntoView({block: "start"});
  }

  function mapGeometry(doc) {
    const inst = doc.inst ? DATA.instances[doc.inst] : null;
    if (inst) return {inst: inst, x0: 0, y0: 0, w: inst.w, h: inst.h};
    const x0 = -maxOf(doc.x.map((v) => -v), -doc.start[0]), y0 = -maxOf(doc.y.map((v) => -v), -doc.start[1]);
    return {inst: null, x0: x0, y0: y0, w: maxOf(doc.x, doc.start[0]) - x0 + 1, h: maxOf(doc.y, doc.start[1]) - y0 + 1};
  }
  function drawMap(doc) {
    const svg = document.getElementById("map"); svg.textContent = "";
    const g = mapGeometry(doc), cs = Math.max(8, Math.min(40, Math.floor(600 / Math.max(g.w, g.h))));
    R.geo = g; R.cs = cs;
    svg.setAttribute("viewBox", `0 0 ${g.w * cs} ${g.h * cs}`);
    svg.setAttribute("width", g.w * cs); svg.setAttribute("height", g.h * cs);
    const cells = sv("g", {id: "cells"});
    for (let y = 0; y < g.h; y++) for (let x = 0; x < g.w; x++) {
      const free = g.inst ? g.inst.map[y][x] === "." : null;
      cells.appendChild(sv("rect", {x: x * cs, y: y * cs, width: cs, height: cs,
                                     class: free === null ? "unknown" : free ? "free" : "wall"}));
    }
    svg.appendChild(cells);
    svg.appendChild(sv("g", {id: "seen"}));
    R.visits = new Map();
    const st = doc.start;
    visit(st[0], st[1], 1);   // the start: observed before any step
    svg.appendChild(sv("rect", {class: "start", x: (st[0] - g.x0) * cs + 2, y: (st[1] - g.y0) * cs + 2,
                                width: cs - 4, height: cs - 4}));
    svg.appendChild(sv("g", {id: "path"}));
    const nodes = sv("g", {id: "nodes"});
    if (g.inst) g.inst.nodes.forEach((n, j) => {
      const ng = sv("g", {class: "node", "data-node": j});
      const shape = n.goal
        ? sv("polygon", {points: star(n.x * cs + cs / 2, n.y * cs + cs / 2, cs * 0.48, cs * 0.22), stroke: "#000", "stroke-width": 1.2})
        : sv("rect", {x: n.x * cs + cs * 0.12, y: n.y * cs + cs * 0.12, width: cs * 0.76, height: cs * 0.76, rx: 3,
                      stroke: "#000", "stroke-width": 1.2});
      ng.appendChild(shape);
      ng.appendChild(sv("text", {x: n.x * cs + cs / 2, y: n.y * cs + cs / 2 + 4, "text-anchor": "middle",
                                  "font-size": Math.max(7, cs * 0.32)}, n.goal ? "" : n.id.slice(0, 2)));
      ng.appendChild(sv("title", {}, n.id + (n.goal ? " (goal)" : "") + (n.requires.length ? "; requires " +
                          n.requires.map((a) => a.join(" and ")).join(" or ") : "; no prerequisites")));
      nodes.appendChild(ng);
    });
    svg.appendChild(nodes);
    svg.appendChild(sv("g", {id: "marks"}));
    svg.appendChild(sv("circle", {id: "agent", class: "agent", r: cs * 0.22}));
    const lg = document.getElementById("map-legend"); lg.textContent = "";
    for (const [c, [name, colour]] of Object.entries(CASES)) {
      const li = el("li"); li.appendChild(el("span", {class: "swatch", style: `background:${colour}`}));
      li.appendChild(document.createTextNode(`case ${c}: ${name}`)); lg.appendChild(li);
    }
    const li = el("li"); li.appendChild(document.createTextNode("\u00d7 error")); lg.appendChild(li);
    if (g.inst) NODE_STATUS.forEach((name, j) => {
      const li2 = el("li"); li2.appendChild(el("span", {class: "swatch", style: `background:${NODE_FILL[j]}`}));
      li2.appendChild(document.createTextNode(`node ${name}`)); lg.appendChild(li2);
    });
    const li3 = el("li"); li3.appendChild(document.createTextNode("\u2605 goal, \u25a1 start")); lg.appendChild(li3);
  }
  function star(cx, cy, r1, r2) {
    const p = [];
    for (let i = 0; i < 10; i++) { const a = Math.PI / 5 * i - Math.PI / 2, r = i % 2 ? r2 : r1; p.push(`${cx + r * Math.cos(a)},${cy + r * Math.sin(a)}`); }
    return p.join(" ");
  }
  // a cell visited in the steps drawn is shaded: its visits are counted, so that cutting the path unshades it
  function visit(x, y, by) {
    const key = x + "," + y, cell = R.visits.get(key) || {n: 0, rect: null};
    cell.n += by;
    if (cell.n > 0 && !cell.rect) {
      cell.rect = document.getElementById("seen").appendChild(sv("rect", {class: "seen", x: (x - R.geo.x0) * R.cs + 1,
        y: (y - R.geo.y0) * R.cs + 1, width: R.cs - 2, height: R.cs - 2}));
    } else if (cell.n === 0 && cell.rect) {
      cell.rect.remove(); cell.rect = null;
    }
    R.visits.set(key, cell);
  }
  function centre(x, y) { return [(x - R.geo.x0) * R.cs + R.cs / 2, (y - R.geo.y0) * R.cs + R.cs / 2]; }

  function go(k) {
    const doc = R.doc; if (!doc) return;
    const n = doc.x.length;
    k = Math.max(0, Math.min(n, k === Infinity ? n : Math.round(k)));
    R.k = k;
    document.getElementById("slider").value = String(k);
    if (doc.env === "rooms") { goRooms(doc, k); return; }
    if (doc.env === "logged") { goStates(doc, k); return; }
    // the path: exactly k segments (an inadmissible move is a dot where the agent stayed), grown or cut from the
    // ones drawn, so that a move of the slider costs its distance, not k (100,000 steps: seconds per step)
    const path = document.getElementById("path"), marks = document.getElementById("marks");
    const frag = document.createDocumentFragment(), mfrag = document.createDocumentFragment();
    for (let t = path.childNodes.length - 1; t >= k; t--) {
      path.lastChild.remove();
      if (doc.err[t] === "1") marks.lastChild.remove();
      visit(doc.x[t], doc.y[t], -1);
    }
    for (let t = path.childNodes.length; t < k; t++) {
      const [x1, y1] = centre(t ? doc.x[t - 1] : doc.start[0], t ? doc.y[t - 1] : doc.start[1]);
      const [x2, y2] = centre(doc.x[t], doc.y[t]);
      frag.appendChild(sv("line", {class: "seg" + (doc.valid[t] === "1" ? "" : " invalid"), x1: x1, y1: y1, x2: x2, y2: y2,
                                   stroke: CASES[doc.case[t]][1], "data-t": t}));
      if (doc.err[t] === "1") {
        const d = R.cs * 0.16;
        mfrag.appendChild(sv("path", {class: "err-mark", d: `M${x2 - d},${y2 - d}L${x2 + d},${y2 + d}M${x2 - d},${y2 + d}L${x2 + d},${y2 - d}`}));
      }
      visit(doc.x[t], doc.y[t], 1);
    }
    path.appendChild(frag); marks.appendChild(mfrag);
    const [ax, ay] = k ? centre(doc.x[k - 1], doc.y[k - 1]) : centre(doc.start[0], doc.start[1]);
    const agent = document.getElementById("agent"); agent.setAttribute("cx", ax); agent.setAttribute("cy", ay);
    // nodes: their status after step k
    const status = {};
    for (const [t, node, st] of doc.nodes) if (t < k) status[node] = st;
    document.querySelectorAll("#nodes g.node").forEach((ng) => {
      const st = status[ng.getAttribute("data-node")] || 0;
      ng.firstChild.setAttribute("fill", NODE_FILL[st]); ng.setAttribute("data-status", NODE_STATUS[st]);
    });
    // the charts' cursor
    document.querySelectorAll("#charts .cursor").forEach((c) => { const x = c.__scale(k); c.setAttribute("x1", x); c.setAttribute("x2", x); });
    stepInfo(doc, k);
  }

  function stepInfo(doc, k) {
    const info = document.getElementById("step-info"); info.textContent = "";
    const n = doc.x.length;
    if (k === 0) {
      info.appendChild(el("span", {id: "step-label"}, `step 0 of ${n}: at the start`));
      info.appendChild(el("span", {id: "step-case", hidden: ""}, ""));
    } else {
      const t = k - 1, c = doc.case[t];
      info.appendChild(el("span", {id: "step-label"}, `step ${k} of ${n} (t = ${t}): action ` +
        `${doc.action[t] === null ? "(none read)" : JSON.stringify(doc.action[t])}${doc.valid[t] === "1" ? "" : ", inadmissible"}, `));
      const chip = el("span", {id: "step-case", class: "case-chip", style: `background:${CASES[c][1]}`, "data-case": c},
                      `case ${c} (${CASES[c][0]})`);
      info.appendChild(chip);
      info.appendChild(document.createTextNode(`, stale score ${doc.stale[t]}, `));
      if (doc.err[t] === "1") {
        const kinds = [doc.xe[t] === "1" ? "exploration" : null, doc.ye[t] === "1" ? "exploitation" : null].filter(Boolean);
        info.appendChild(el("span", {class: "err-chip", id: "step-error"}, `\u00d7 error (${kinds.join(" and ")})`));
      } else {
        info.appendChild(el("span", {id: "step-error"}, "no error"));
      }
    }
    stepTexts(doc, k);
  }
  function stepTexts(doc, k) {
    const box = document.getElementById("step-text"); box.textContent = "";
    if (doc.text && k > 0) {
      for (const f of ["observation", "raw", "reasoning"]) {
        const v = doc.text[f] && doc.text[f][k - 1];
        if (v === null || v === undefined) continue;
        box.appendChild(el("h3", {}, {observation: "Observation after the step", raw: "Raw model output", reasoning: "Reasoning"}[f]));
        box.appendChild(el("pre", {class: "text-" + f}, v));
      }
    } else if (!doc.text) {
      box.appendChild(el("p", {class: "empty"}, "This trajectory's log has no observation, raw output or reasoning."));
    }
  }

  // the series' names in one row, right-aligned on the title's line, each in its colour (dashed ones marked)
  function keyRow(svg, series, right, y) {
    let x = right;
    for (let j = series.length - 1; j >= 0; j--) {
      const name = series[j].name + (j ? " (dashed)" : "");
      svg.appendChild(sv("text", {x: x, y: y, "text-anchor": "end", "font-size": 11, style: `fill:${series[j].colour}`}, name));
      x -= name.length * 6.6 + 14;
    }
  }
  function lineChart(id, title, series, n, yLabel, opts) {
    const W = 460, H = opts && opts.strip ? 96 : 184, box = {x0: 56, x1: W - 12, y0: opts && opts.strip ? 26 : 40, y1: H - 40};
    const svg = sv("svg", {id: id, viewBox: `0 0 ${W} ${H}`, "aria-label": title});
    svg.appendChild(sv("text", {x: box.x0, y: 15, "font-weight": 600}, title));
    const xs = {scale: linear(0, Math.max(n, 1), box.x0, box.x1), ticks: ticks(0, Math.max(n, 1), 5)};
    if (opts && opts.strip) {
      axes(svg, box, xs, {scale: (v) => v, ticks: []}, "step", "");
      const w = (box.x1 - box.x0) / Math.max(n, 1);
      const cases = series[0].values;
      for (let t = 0, end; t < n; t = end) {   // a rect per run of one case, not per step
        for (end = t + 1; end < n && cases[end] === cases[t];) end++;
        svg.appendChild(sv("rect", {x: xs.scale(t), y: box.y0, width: Math.max(w * (end - t), 0.5),
                                    height: box.y1 - box.y0, fill: CASES[cases[t]][1]}));
      }
    } else {
      const ymax = niceMax(series.reduce((m, s) => maxOf(s.values, m), 1));
      const ys = {scale: linear(0, ymax, box.y1, box.y0), ticks: ticks(0, ymax, 4)};
      axes(svg, box, xs, ys, "step", yLabel);
      series.forEach((s, j) => {
        // values[t] holds after step t+1; the curve starts at 0 before the first step
        const pts = [`${xs.scale(0)},${ys.scale(0)}`].concat(
          s.values.map((v, t) => (v === null ? null : `${xs.scale(t + 1)},${ys.scale(v)}`)).filter(Boolean));
        svg.appendChild(sv("polyline", {points: pts.join(" "), fill: "none", stroke: s.colour, "stroke-width": 1.8,
                                        "stroke-dasharray": j ? "5 3" : ""}));
      });
      keyRow(svg, series, box.x1, 31);
    }
    const cursor = sv("line", {class: "cursor", y1: box.y0, y2: box.y1, x1: box.x0, x2: box.x0});
    cursor.__scale = xs.scale;
    svg.appendChild(cursor);
    return svg;
  }
  function drawCharts(doc) {
    const charts = document.getElementById("charts"); charts.textContent = "";
    const n = doc.x.length;
    const cum = (flags) => { let s = 0; return Array.from(flags, (f) => (s += f === "1" ? 1 : 0)); };
    charts.appendChild(lineChart("chart-stale", "Stale score S(t)", [{name: "S(t)", colour: "#000", values: doc.stale}], n, "S(t)"));
    charts.appendChild(lineChart("chart-errors", "Cumulative errors", [
      {name: "exploration", colour: "#0072B2", values: cum(doc.xe)},
      {name: "exploitation", colour: "#D55E00", values: cum(doc.ye)}], n, "errors"));
    charts.appendChild(lineChart("chart-case", "Case over time", [{values: Array.from(doc.case)}], n, "", {strip: true}));
    if (doc.ecc) charts.appendChild(lineChart("chart-ecc", "ECC", [{name: "ECC", colour: "#009E73", values: doc.ecc}], n, "ECC"));
  }


  // -- rooms worlds (Grams et al.): rooms and doors, the path between rooms, returns and gaps per episode ------
  function drawRooms(doc) {
    const svg = document.getElementById("map"); svg.textContent = "";
    const inst = doc.inst ? DATA.instances[doc.inst] : null;
    const lg = document.getElementById("map-legend"); lg.textContent = "";
    R.centres = {};
    if (!inst) {
      svg.setAttribute("viewBox", "0 0 400 60"); svg.setAttribute("width", 400); svg.setAttribute("height", 60);
      svg.appendChild(sv("text", {x: 10, y: 30}, "pass --bench to draw the rooms of this instance"));
      svg.appendChild(sv("g", {id: "path"})); svg.appendChild(sv("g", {id: "marks"}));
      return;
    }
    const xs = inst.rooms.map((r) => r.x), ys = inst.rooms.map((r) => r.y);
    const x0 = Math.min(...xs), y0 = Math.min(...ys);
    const span = Math.max(Math.max(...xs) - x0, Math.max(...ys) - y0, 1);
    const cs = Math.max(40, Math.min(120, Math.floor(560 / (span + 1)))), pad = cs * 0.6;
    const W = (Math.max(...xs) - x0) * cs + 2 * pad, H = (Math.max(...ys) - y0) * cs + 2 * pad;
    svg.setAttribute("viewBox", `0 0 ${W} ${H}`); svg.setAttribute("width", W); svg.setAttribute("height", H);
    for (const r of inst.rooms) R.centres[r.id] = [(r.x - x0) * cs + pad, (r.y - y0) * cs + pad];
    const doors = sv("g", {id: "doors"});
    for (const d of inst.doors) {
      const [a, b] = d.between.map((id) => R.centres[id]);
      const line = sv("line", {class: "door", x1: a[0], y1: a[1], x2: b[0], y2: b[1]});
      line.appendChild(sv("title", {}, `door ${d.name}: ${d.between.join(" \u2194 ")}`));
      doors.appendChild(line);
    }
    svg.appendChild(doors);
    const rooms = sv("g", {id: "rooms"}), size = cs * 0.62;
    for (const r of inst.rooms) {
      const [cx, cy] = R.centres[r.id];
      const g = sv("g", {class: "room-group", "data-room": r.id});
      g.appendChild(sv("rect", {class: "room", x: cx - size / 2, y: cy - size / 2, width: size, height: size, rx: 6,
                                "stroke-width": r.id === inst.start ? 3.5 : 1.5}));
      g.appendChild(sv("text", {x: cx, y: cy - size / 2 + 13, "text-anchor": "middle", "font-size": 11}, r.id));
      const balls = inst.balls.filter((b) => b.room === r.id);
      balls.forEach((b, j) => {
        const bx = cx - size / 2 + 10 + (j % 4) * 14, by = cy + 4 + Math.floor(j / 4) * 14;
        const c = sv("circle", {class: "ball", cx: bx, cy: by, r: 5, fill: "#E69F00", stroke: "#000",
                                "data-name": b.name.toLowerCase().split(/\s+/).join(" ")});
        c.appendChild(sv("title", {}, `${b.name} ball, reward ${b.reward}`));
        g.appendChild(c);
      });
      rooms.appendChild(g);
    }
    svg.appendChild(rooms);
    svg.appendChild(sv("g", {id: "path"}));
    svg.appendChild(sv("g", {id: "marks"}));
    svg.appendChild(sv("circle", {id: "agent", class: "agent", r: 7}));
    const episodes = [...new Set(doc.episode)];
    episodes.forEach((e) => {
      const li = el("li"); li.appendChild(el("span", {class: "swatch", style: `background:${PALETTE[e % PALETTE.length]}`}));
      li.appendChild(document.createTextNode(`episode ${e + 1}`)); lg.appendChild(li);
    });
    const li = el("li"); li.appendChild(document.createTextNode("thick border: start room; \u25cf ball (hollow: collected this episode); grey line: door"));
    lg.appendChild(li);
  }
  function goRooms(doc, k) {
    const path = document.getElementById("path"); path.textContent = "";
    const frag = document.createDocumentFragment();
    let here = doc.start, last = -1;
    for (let t = 0; t < k; t++) {
      if (doc.episode[t] !== last) { here = doc.start; last = doc.episode[t]; }   // every episode starts at the start
      const a = R.centres[here], b = R.centres[doc.room[t]];
      const off = (doc.episode[t] % 5 - 2) * 3;   // episodes side by side, not on top of each other
      frag.appendChild(sv("line", {class: "seg" + (doc.valid[t] === "1" ? "" : " invalid"), "data-t": t,
        x1: a ? a[0] + off : 0, y1: a ? a[1] + off : 0, x2: b ? b[0] + off : 0, y2: b ? b[1] + off : 0,
        stroke: PALETTE[doc.episode[t] % PALETTE.length]}));
      here = doc.room[t];
    }
    path.appendChild(frag);
    // balls collected so far in the episode of step k are drawn hollow (every episode puts them all back)
    const taken = new Set();
    for (let t = k - 1; t >= 0 && doc.episode[t] === doc.episode[k - 1]; t--) {
      const a = doc.action[t];
      if (doc.valid[t] === "1" && a && /\sball\s*$/i.test(a)) taken.add(a.trim().replace(/\s+ball$/i, "").toLowerCase());
    }
    document.querySelectorAll("#rooms circle.ball").forEach((c) => {
      c.setAttribute("fill", taken.has(c.getAttribute("data-name")) ? "#fff" : "#E69F00");
    });
    const agent = document.getElementById("agent");
    const at = k === 0 ? doc.start : doc.room[k - 1];
    if (agent && R.centres[at]) { agent.setAttribute("cx", R.centres[at][0]); agent.setAttribute("cy", R.centres[at][1]); }
    const episode = k === 0 ? 0 : doc.episode[k - 1];
    document.querySelectorAll("#charts .cursor").forEach((c) => { const x = c.__scale(c.__perStep ? k : episode + 0.5); c.setAttribute("x1", x); c.setAttribute("x2", x); });
    const info = document.getElementById("step-info"); info.textContent = "";
    if (k === 0) {
      info.appendChild(el("span", {id: "step-label"}, `step 0 of ${doc.x.length}: in the start room ${label(doc.start)}`));
    } else {
      const t = k - 1;
      info.appendChild(el("span", {id: "step-label"}, `step ${k} of ${doc.x.length} (t = ${t}), episode ${doc.episode[t] + 1}: ` +
        `action ${doc.action[t] === null ? "(none read)" : JSON.stringify(doc.action[t])}` +
        `${doc.valid[t] === "1" ? "" : " (invalid)"}, now in ${label(doc.room[t])}`));
    }
    stepTexts(doc, k);
  }
  function episodeChart(id, title, series, n, yLabel) {
    const W = 460, H = 194, box = {x0: 56, x1: W - 12, y0: 40, y1: H - 40};
    const svg = sv("svg", {id: id, viewBox: `0 0 ${W} ${H}`, "aria-label": title});
    svg.appendChild(sv("text", {x: box.x0, y: 15, "font-weight": 600}, title));
    const vals = series.flatMap((s) => s.values.filter((v) => v !== null));
    const ymax = niceMax(Math.max(1e-9, ...vals));
    const xs = {scale: linear(0, Math.max(n, 1), box.x0, box.x1), ticks: []};
    const ys = {scale: linear(0, ymax, box.y1, box.y0), ticks: ticks(0, ymax, 4)};
    axes(svg, box, xs, ys, "episode", yLabel);
    for (let e = 0; e < n; e++) svg.appendChild(sv("text", {x: xs.scale(e + 0.5), y: box.y1 + 18, "text-anchor": "middle"}, String(e + 1)));
    series.forEach((s, j) => {
      const pts = s.values.map((v, e) => (v === null ? null : `${xs.scale(e + 0.5)},${ys.scale(v)}`)).filter(Boolean);
      svg.appendChild(sv("polyline", {points: pts.join(" "), fill: "none", stroke: s.colour, "stroke-width": 2,
                                      "stroke-dasharray": j ? "5 3" : ""}));
      s.values.forEach((v, e) => { if (v !== null) svg.appendChild(sv("circle", {cx: xs.scale(e + 0.5), cy: ys.scale(v), r: 3.5, fill: s.colour})); });
    });
    keyRow(svg, series, box.x1, 31);
    const cursor = sv("line", {class: "cursor", y1: box.y0, y2: box.y1, x1: box.x0, x2: box.x0});
    cursor.__scale = xs.scale;
    svg.appendChild(cursor);
    return svg;
  }
  function stepCursor(svg) { svg.querySelector(".cursor").__perStep = true; return svg; }
  function drawEpisodeCharts(doc) {
    const charts = document.getElementById("charts"); charts.textContent = "";
    const eps = doc.episodes || [], n = eps.length;
    if (!n) { charts.appendChild(el("p", {class: "empty"}, "No episodes graded for this trajectory.")); return; }
    const col = (c) => eps.map((e) => (e[c] === undefined ? null : e[c]));
    charts.appendChild(episodeChart("chart-returns", "Returns per episode", [
      {name: "agent", colour: "#0072B2", values: col("agent_return")},
      {name: "optimal exploit.", colour: "#D55E00", values: col("exploit_return")},
      {name: "R_max", colour: "#000000", values: col("max_return")}], n, "return"));
    charts.appendChild(episodeChart("chart-gaps", "Gaps per episode (normalised by R_max)", [
      {name: "total", colour: "#000000", values: col("total_gap")},
      {name: "exploration", colour: "#0072B2", values: col("explore_gap")},
      {name: "exploitation", colour: "#D55E00", values: col("exploit_gap")}], n, "gap"));
    charts.appendChild(episodeChart("chart-coverage", "Coverage per episode", [
      {name: "coverage", colour: "#009E73", values: col("coverage")}], n, "rooms known / all"));
    // ECC is per step: its own axis, and its cursor follows the step (it is not an episode chart)
    if (doc.ecc) charts.appendChild(stepCursor(lineChart("chart-ecc", "ECC", [{name: "ECC", colour: "#009E73", values: doc.ecc}], doc.x.length, "ECC")));
  }

  // -- logged worlds (text games eebench cannot simulate): the states read from the log, a row each ----------
  function drawStates(doc) {
    const svg = document.getElementById("map"); svg.textContent = "";
    const lg = document.getElementById("map-legend"); lg.textContent = "";
    const states = [...new Set(doc.state.filter((s) => s !== null))];   // in order of first visit
    R.row = Object.fromEntries(states.map((s, j) => [s, j]));
    if (!states.length) {
      svg.setAttribute("viewBox", "0 0 460 60"); svg.setAttribute("width", 460); svg.setAttribute("height", 60);
      svg.appendChild(sv("text", {x: 10, y: 30}, "no state was read from this log (a checkpoint set's state reader reads one)"));
      svg.appendChild(sv("g", {id: "path"}));
      return;
    }
    const n = doc.state.length, rh = Math.max(6, Math.min(20, Math.floor(560 / states.length)));
    const box = {x0: 150, x1: 600, y0: 16, y1: 16 + rh * states.length};
    svg.setAttribute("viewBox", `0 0 610 ${box.y1 + 34}`); svg.setAttribute("width", 610); svg.setAttribute("height", box.y1 + 34);
    R.sx = linear(0, Math.max(n, 1), box.x0, box.x1); R.sy = (j) => box.y0 + rh * (j + 0.5);
    const every = Math.ceil(12 / rh);   // a label each row when rows are tall enough, else every few
    states.forEach((s, j) => {
      svg.appendChild(sv("line", {x1: box.x0, x2: box.x1, y1: R.sy(j), y2: R.sy(j), stroke: "#eee"}));
      if (j % every === 0) {
        const name = svg.appendChild(sv("text", {x: box.x0 - 6, y: R.sy(j) + 4, "text-anchor": "end",
                                                 "font-size": Math.min(11, rh)}, s.length > 22 ? s.slice(0, 21) + "\u2026" : s));
        if (s.length > 22) name.appendChild(sv("title", {}, s));   // the whole name on hover
      }
    });
    axes(svg, box, {scale: R.sx, ticks: ticks(0, Math.max(n, 1), 5)}, {scale: (v) => v, ticks: []}, "step", "");
    svg.appendChild(sv("g", {id: "path"}));
    svg.appendChild(sv("circle", {id: "agent", class: "agent", r: 5}));
    const li = el("li"); li.appendChild(document.createTextNode("a row per state read from the log, in order of first visit; the line: the state after each step"));
    lg.appendChild(li);
  }
  function goStates(doc, k) {
    const path = document.getElementById("path"); path.textContent = "";
    const pts = [];
    for (let t = 0; t < k; t++) if (doc.state[t] !== null) pts.push(`${R.sx(t + 1)},${R.sy(R.row[doc.state[t]])}`);
    if (pts.length) path.appendChild(sv("polyline", {points: pts.join(" "), fill: "none", stroke: "#0072B2", "stroke-width": 1.6}));
    let last = null;
    for (let t = k - 1; t >= 0 && last === null; t--) if (doc.state[t] !== null) last = t;
    const agent = document.getElementById("agent");
    if (agent) {
      agent.setAttribute("visibility", last === null ? "hidden" : "visible");
      if (last !== null) { agent.setAttribute("cx", R.sx(last + 1)); agent.setAttribute("cy", R.sy(R.row[doc.state[last]])); }
    }
    document.querySelectorAll("#charts .cursor").forEach((c) => { const x = c.__scale(k); c.setAttribute("x1", x); c.setAttribute("x2", x); });
    const info = document.getElementById("step-info"); info.textContent = "";
    const n = doc.state.length;
    if (k === 0) {
      info.appendChild(el("span", {id: "step-label"}, `step 0 of ${n}: before the first step`));
    } else {
      const t = k - 1, s = doc.state[t];
      info.appendChild(el("span", {id: "step-label"}, `step ${k} of ${n} (t = ${t}): action ` +
        `${doc.action[t] === null ? "(none read)" : JSON.stringify(doc.action[t])}, ` +
        (s === null ? "no state read" : `state ${JSON.stringify(s)} (earlier visits: ${label(doc.depth[t])})`)));
    }
    stepTexts(doc, k);
  }
  function drawStateCharts(doc) {
    const charts = document.getElementById("charts"); charts.textContent = "";
    const n = doc.state.length;
    if (doc.ecc) charts.appendChild(lineChart("chart-ecc", "ECC", [{name: "ECC", colour: "#009E73", values: doc.ecc}], n, "ECC"));
    charts.appendChild(lineChart("chart-depth", "Visit depth (earlier visits of the state entered)",
      [{name: "visit depth", colour: "#000", values: doc.depth}], n, "visits"));
  }

  // -- Grams et al. Figure 2: agent return, exploration gap and coverage per model, over episodes ----------
  function gapsFigure() {
    const rows = DATA.gaps_by_episode || [];
    if (!rows.length) return;
    const s = section("gaps", "Return, exploration gap and coverage per model (Grams et al., Figure 2)",
      "Means over each model's trajectories at each episode, with 95% bootstrap intervals. The exploration gap " +
      "(lower is better) measures exploration where the agent's return does not.");
    const models = [...new Set(rows.map((r) => r.model))];
    const n = Math.max(...rows.map((r) => r.episode)) + 1;
    const figs = el("div", {class: "figs"});
    for (const [c, title, yl] of [["agent_return", "Agent return", "return"], ["explore_gap", "Exploration gap", "gap"],
                                  ["coverage", "Coverage", "rooms known / all"]]) {
      const W = 400, H = 280, box = {x0: 56, x1: W - 10, y0: 30, y1: H - 44};
      const svg = sv("svg", {viewBox: `0 0 ${W} ${H}`, class: "prompt-chart", id: "gaps-" + c, "aria-label": title});
      svg.appendChild(sv("text", {x: box.x0, y: 16, "font-weight": 600}, title));
      const top = niceMax(Math.max(1e-9, ...rows.map((r) => (r[c] ? r[c][2] : 0))));
      const ys = {scale: linear(0, top, box.y1, box.y0), ticks: ticks(0, top, 4)};
      const xs = {scale: linear(0, n, box.x0, box.x1), ticks: []};
      axes(svg, box, xs, ys, "episode", yl);
      for (let e = 0; e < n; e++) svg.appendChild(sv("text", {x: xs.scale(e + 0.5), y: box.y1 + 18, "text-anchor": "middle"}, String(e + 1)));
      models.forEach((m, j) => {
        const colour = colourOf(m), dx = (j - (models.length - 1) / 2) * 4;
        const mine = rows.filter((r) => r.model === m && r[c]);
        svg.appendChild(sv("polyline", {fill: "none", stroke: colour, "stroke-width": 2,
          points: mine.map((r) => `${xs.scale(r.episode + 0.5) + dx},${ys.scale(r[c][0])}`).join(" ")}));
        for (const r of mine) {
          const x = xs.scale(r.episode + 0.5) + dx;
          svg.appendChild(sv("line", {x1: x, x2: x, y1: ys.scale(r[c][1]), y2: ys.scale(r[c][2]), stroke: colour}));
          const p = sv("circle", {class: "gap-point", cx: x, cy: ys.scale(r[c][0]), r: 4, fill: colour, "data-model": m});
          p.appendChild(sv("title", {}, `${m}, episode ${r.episode + 1}: ${fmt(r[c][0])} [${fmt(r[c][1])}, ${fmt(r[c][2])}], ${r.n} trajectories`));
          svg.appendChild(p);
        }
      });
      figs.appendChild(svg);
    }
    s.appendChild(figs);
    s.appendChild(legend(models));
  }

  // -- build the page ---------------------------------------------------------------------------------
  app.textContent = "";
  header();
  summaryTable();
  figureOne();
  gapsFigure();
  prompts();
  trajectoryList();
  replaySection();
  // a link to a trajectory (#t=ID) opens its replay: on load, once the replay blocks below this script are
  // parsed, and whenever the fragment changes (a link within the page, an edited address)
  function openLinked() {
    const linked = (location.hash.match(/^#t=(.*)$/) || [])[1] || "";
    let wanted = linked;
    try { wanted = decodeURIComponent(linked); } catch (e) { /* a hand-written `%` that escapes nothing: as typed */ }
    const i = wanted ? DATA.trajectories.findIndex((r) => r[0] === wanted) : -1;
    if (i >= 0) openReplay(i);
  }
  document.addEventListener("DOMContentLoaded", openLinked);
  window.addEventListener("hashchange", openLinked);
})();
