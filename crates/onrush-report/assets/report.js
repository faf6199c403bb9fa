/* onrush report: draws the charts from the embedded data with uPlot, then writes its own
   check into #onrush-report-status (charts drawn, charts with data, errors, draw time). */
(function () {
  'use strict';
  var t0 = performance.now();
  var errors = window.onrushErrors || (window.onrushErrors = []);
  var statusEl = document.getElementById('onrush-report-status');
  var plots = [];   // {el, plot, drawn, nonempty, id}

  var C = { blue: '#2563eb', teal: '#0d9488', green: '#16a34a', amber: '#d97706', red: '#dc2626',
    purple: '#7c3aed', pink: '#db2777', sky: '#0284c7', slate: '#475569', grey: '#94a3b8',
    lime: '#65a30d', brown: '#92400e' };
  var PALETTE = [C.red, C.amber, C.purple, C.sky, C.pink, C.teal, C.brown, C.lime, C.slate, C.blue, C.green];

  // ---- formatting ---------------------------------------------------------------------------
  function elapsed(s) {
    if (s == null) return '';
    s = Math.round(s);
    var h = Math.floor(s / 3600), m = Math.floor(s / 60) % 60, x = s % 60;
    var mm = (h > 0 && m < 10 ? '0' : '') + m, ss = (x < 10 ? '0' : '') + x;
    return (h > 0 ? h + ':' : '') + mm + ':' + ss;
  }
  function trim(s) { return s.indexOf('.') < 0 ? s : s.replace(/\.?0+$/, ''); }
  function num(v) {
    if (v == null || isNaN(v)) return '–';
    var a = Math.abs(v);
    if (a >= 1e9) return trim((v / 1e9).toFixed(2)) + 'G';
    if (a >= 1e6) return trim((v / 1e6).toFixed(2)) + 'M';
    if (a >= 1e4) return trim((v / 1e3).toFixed(1)) + 'k';
    if (a >= 100 || v === Math.round(v)) return String(Math.round(v));
    return trim(v.toFixed(2));
  }
  function ms(v) {
    if (v == null || isNaN(v)) return '–';
    if (v >= 10000) return trim((v / 1000).toFixed(2)) + ' s';
    if (v >= 1000) return trim((v / 1000).toFixed(3)) + ' s';
    if (v >= 100) return trim(v.toFixed(1)) + ' ms';
    if (v >= 10) return trim(v.toFixed(2)) + ' ms';
    return trim(v.toFixed(3)) + ' ms';
  }
  function bytes(v) {
    if (v == null || isNaN(v)) return '–';
    var u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'], i = 0;
    while (v >= 1024 && i < u.length - 1) { v /= 1024; i++; }
    return (i === 0 ? String(Math.round(v)) : trim(v.toFixed(1))) + ' ' + u[i] + '/s';
  }
  var FMT = { count: num, ms: ms, bytes: bytes };
  function pctOfX(x, extra) {
    var d = Math.max(0, Math.ceil(x - 1e-9) - 1) + (extra || 0);
    return trim((100 * (1 - Math.pow(10, -x))).toFixed(d)) + '%';
  }

  // ---- data ---------------------------------------------------------------------------------
  var D;
  try {
    D = JSON.parse(document.getElementById('onrush-data').textContent);
  } catch (e) {
    errors.push('embedded data: ' + e);
    return report();
  }
  var B = D.baseline;
  var N = Math.max(D.seconds, B ? B.seconds : 0);
  var xs = new Array(N);
  for (var i = 0; i < N; i++) xs[i] = i;
  function pad(a, n) {
    var out = new Array(n);
    for (var i = 0; i < n; i++) out[i] = a && i < a.length ? a[i] : null;
    return out;
  }
  function col(src, key) { return pad(src && src.series[key], N); }
  function has(key) { return Object.prototype.hasOwnProperty.call(D.series, key); }
  function nonNull(a) { for (var i = 0; i < a.length; i++) if (a[i] != null) return true; return false; }

  // ---- the charts over time: add a series or a chart here ------------------------------------
  function s(key, label, color, o) {
    o = o || {}; o.key = key; o.label = label; o.color = color; return o;
  }
  var vus = [s('active_vus', D.scenarios.length > 1 ? 'all scenarios' : 'VUs', C.purple, { fill: true })];
  if (D.scenarios.length > 1) D.scenarios.forEach(function (n, k) {
    vus.push(s('vus:' + n, n, PALETTE[(k + 3) % PALETTE.length], { width: 1.25 }));
  });
  var fails = [s('failures', 'all failures', C.red, { fill: true, stepped: true })];
  Object.keys(D.series).filter(function (k) { return k.indexOf('fail:') === 0; }).forEach(function (k, j) {
    fails.push(s(k, k.slice(5), PALETTE[(j + 1) % PALETTE.length], { width: 1.25, stepped: true }));
  });
  // A distributed run: each agent's requests per second (a lost agent's line stops).
  var agents = Object.keys(D.series).filter(function (k) { return k.indexOf('agent:') === 0; }).map(function (k, j) {
    return s(k, k.slice(6), PALETTE[j % PALETTE.length], { width: 1.25 });
  });
  var SPECS = [
    { id: 'throughput', wide: true, title: 'Throughput', what: 'requests and iterations completed per second', unit: 'count',
      series: [s('requests', 'requests/s', C.blue, { fill: true }), s('iterations', 'iterations/s', C.teal),
        s('requests', 'baseline requests/s', C.grey, { base: true })] },
    { id: 'latency', wide: true, title: 'Latency per second', what: 'percentiles of the requests completed in each second; click a legend entry to show or hide it', unit: 'ms',
      steps: ['p50', 'p90', 'p99', 'max'],
      series: [s('lat_p50', 'p50', C.green), s('lat_p90', 'p90', C.amber), s('lat_p99', 'p99', C.red),
        s('lat_max', 'max', C.slate, { width: 1, dash: [2, 3] }), s('lat_p99', 'baseline p99 (all steps)', C.grey, { base: true })] },
    { id: 'distribution', wide: true },
    { id: 'vus', title: 'Active VUs', what: 'peak of each second', unit: 'count', series: vus },
    { id: 'failures', title: 'Failures per second', what: 'by failure class', unit: 'count', series: fails },
    { id: 'connections', title: 'Connections opened per second', unit: 'count',
      series: [s('connections_opened', 'connections/s', C.sky, { fill: true, stepped: true })] },
    { id: 'bytes', title: 'Data per second', unit: 'bytes',
      series: [s('bytes_in', 'received', C.blue, { fill: true }), s('bytes_out', 'sent', C.amber)] },
    { id: 'schedule', title: 'Dropped iterations and schedule lag', what: 'open model: iterations that found no free VU; p99 of how late the others started', unit: 'count', openOnly: true,
      series: [s('dropped_iterations', 'dropped/s', C.red, { fill: true, stepped: true }), s('lag_p99', 'schedule lag p99', C.amber, { unit: 'ms' })] },
    { id: 'handshakes', title: 'TLS handshakes per second', unit: 'count', optional: true,
      series: [s('handshakes', 'handshakes/s', C.teal, { fill: true })] },
    { id: 'agents', wide: true, title: 'Requests per second, per agent', what: 'distributed run: each load agent\'s own rate; a lost agent\'s line ends where it was lost', unit: 'count', optional: true,
      series: agents }
  ];

  // ---- drawing ------------------------------------------------------------------------------
  var chartsEl = document.getElementById('charts');
  var FONT = '11px ' + getComputedStyle(document.body).fontFamily;
  var measure = document.createElement('canvas').getContext('2d');
  measure.font = FONT;
  // The width of the widest label in CSS px, measured in the font uPlot draws them with: its
  // axis font scaled by the device pixel ratio (and rounded to whole pixels), divided back.
  // Measuring the unscaled 11px font instead can come out narrower than what is drawn.
  function labelsWidth(values, axis) {
    var scaled = axis && axis.font && axis.font[0];
    var ratio = scaled ? uPlot.pxRatio || 1 : 1;
    measure.font = scaled || FONT;
    var w = 0;
    (values || []).forEach(function (v) { if (v) w = Math.max(w, measure.measureText(String(v)).width / ratio); });
    return w;
  }
  // What an axis needs besides its labels: its ticks, the gap before the labels, 3 px slack.
  function axisPad(axis) {
    return (axis.ticks && axis.ticks.show !== false ? axis.ticks.size || 0 : 0) + (axis.gap || 0) + 3;
  }
  // Axis width from its longest label, so labels like "0.75 ms" are never cut (".75 ms" was
  // reported). uPlot calls this once per layout cycle, and a later cycle's labels can be wider
  // (the plot grew, so finer splits: "0.5 ms" becomes "0.75 ms"): the width is measured again
  // every cycle, instead of keeping the first cycle's, and only grows within a layout, so the
  // cycles still converge. The padding comes from the axis's own tick size and gap (it was a
  // fixed 16 px, 1 px more than they take).
  function axisSize(u, values, axisIdx, cycleNum) {
    var axis = u.axes[axisIdx];
    var need = Math.ceil(labelsWidth(values, axis) + axisPad(axis));
    return cycleNum > 1 && axis._size ? Math.max(axis._size, need) : need;
  }
  // Checked after every draw (the browser test reads data-errors): a y-axis label wider than
  // its axis is drawn cut off.
  function checkAxes(id, u) {
    u.axes.forEach(function (axis, k) {
      if (k === 0 || !axis._show || !axis._values) return;
      var need = labelsWidth(axis._values, axis) + axisPad(axis) - 3;
      if (need > axis._size + 0.5 && cut.indexOf(id) < 0) {
        cut.push(id);
        errors.push(id + ': axis labels cut (' + axis._values.filter(Boolean).join(', ') + ' need ' + need.toFixed(1) + ' px, axis ' + axis._size + ' px)');
      }
    });
  }
  var cut = [];
  var STEPPED = uPlot.paths && uPlot.paths.stepped ? uPlot.paths.stepped({ align: 1 }) : undefined;
  function figure(spec, title, what) {
    var f = document.createElement('figure');
    f.className = 'chart' + (spec.wide ? ' wide' : '');
    f.id = 'chart-' + spec.id;
    var cap = document.createElement('figcaption');
    cap.innerHTML = '<b></b><span class="what"></span><span class="tools"></span>';
    cap.childNodes[0].textContent = title;
    cap.childNodes[1].textContent = what || '';
    f.appendChild(cap);
    var body = document.createElement('div');
    f.appendChild(body);
    chartsEl.appendChild(f);
    return { fig: f, tools: cap.childNodes[2], body: body };
  }
  function width(el) { return Math.max(260, el.clientWidth || 600); }
  function fill(color) { return color + '1f'; }
  function zeroRange(u, min, max) { return [0, max > 0 ? max * 1.08 : 1]; }
  function stepSelect(tools, onChange) {
    var sel = document.createElement('select');
    sel.setAttribute('aria-label', 'step');
    var o = document.createElement('option'); o.value = '-1'; o.textContent = 'All steps'; sel.appendChild(o);
    D.steps.forEach(function (n, k) {
      var o = document.createElement('option'); o.value = String(k); o.textContent = n; sel.appendChild(o);
    });
    sel.addEventListener('change', function () { onChange(+sel.value); });
    tools.appendChild(sel);
    return sel;
  }
  function logToggle(tools, on, onChange) {
    var l = document.createElement('label');
    l.innerHTML = '<input type="checkbox"> log scale';
    l.firstChild.checked = on;
    l.firstChild.addEventListener('change', function () { onChange(l.firstChild.checked); });
    tools.appendChild(l);
  }
  function positive(a) { return a.map(function (v) { return v != null && v > 0 ? v : null; }); }
  function maxOf(a) { var m = 0; for (var i = 0; i < a.length; i++) if (a[i] > m) m = a[i]; return m; }
  function median(a) {
    var v = a.filter(function (x) { return x != null; }).sort(function (x, y) { return x - y; });
    return v.length ? v[v.length >> 1] : 0;
  }
  // A chart that can be rebuilt (the log scale toggle) and fed new data (the step selector).
  function chart(id, parts, optsFor, dataFor, nonempty) {
    var entry = { id: id, el: parts.body, plot: null, drawn: false, nonempty: nonempty, state: { step: -1, log: false } };
    entry.build = function () {
      if (entry.plot) entry.plot.destroy();
      var opts = optsFor(entry.state);
      opts.width = width(parts.body);
      opts.hooks = { draw: [function (u) { entry.drawn = true; checkAxes(id, u); report(); }] };
      if (entry.markers) opts.hooks.draw.unshift(drawMarkers);
      var data = dataFor(entry.state);
      if (entry.state.log) data = data.map(function (a, k) { return k === 0 ? a : positive(a); });
      entry.plot = new uPlot(opts, data, parts.body);
    };
    entry.update = function () {
      var data = dataFor(entry.state);
      if (entry.state.log) data = data.map(function (a, k) { return k === 0 ? a : positive(a); });
      entry.plot.setData(data);
    };
    plots.push(entry);
    return entry;
  }
  // Events (events.jsonl: pause, resume, stop, load changes) as dashed lines with a label.
  var EVENT_COLOR = { pause: C.amber, resume: C.green, stop: C.red, load: C.purple };
  function drawMarkers(u) {
    var ev = D.events || [];
    if (!ev.length) return;
    var ctx = u.ctx, top = u.bbox.top, h = u.bbox.height, r = uPlot.pxRatio || 1;
    ctx.save();
    ctx.setLineDash([4 * r, 3 * r]);
    ctx.lineWidth = r;
    ctx.font = (10 * r) + 'px ' + getComputedStyle(document.body).fontFamily;
    ev.forEach(function (e) {
      var x = Math.round(u.valToPos(e.t, 'x', true));
      if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) return;
      ctx.strokeStyle = ctx.fillStyle = EVENT_COLOR[e.kind] || C.slate;
      ctx.beginPath(); ctx.moveTo(x, top); ctx.lineTo(x, top + h); ctx.stroke();
      ctx.fillText(e.label, x + 3 * r, top + 10 * r);
    });
    ctx.restore();
  }
  // Byte rates tick at 1, 2, 5, 10... KiB, MiB, GiB rather than at decimal fractions of them.
  var BYTE_INCRS = [];
  [1, 1024, 1048576, 1073741824].forEach(function (u) {
    [1, 2, 5, 10, 20, 50, 100, 200, 500].forEach(function (m) { BYTE_INCRS.push(m * u); });
  });
  // On a log scale, grid lines and ticks at powers of ten only.
  function decades(u, splits) {
    return splits.map(function (v) { var l = Math.log10(v); return Math.abs(l - Math.round(l)) < 1e-9 ? v : null; });
  }
  function yAxis(scale, fmt, k, log) {
    var a = { scale: scale, side: k === 0 ? 3 : 1, size: axisSize, font: FONT, grid: { show: k === 0 },
      values: function (p, v) { return v.map(fmt); } };
    if (scale === 'bytes') a.incrs = BYTE_INCRS;
    if (log) { a.grid.filter = decades; a.ticks = { filter: decades }; }
    return a;
  }

  function timeChart(spec) {
    var list = spec.series.filter(function (x) { return x.base ? !!B : true; });
    var present = list.some(function (x) { return !x.base && has(x.key); });
    if (spec.optional && !present) return;
    // Only an open-model run can drop iterations: a closed-only run gets no empty chart of them.
    if (spec.openOnly && !D.open_model) return;
    var parts = figure(spec, spec.title, spec.what);
    var units = [];
    list.forEach(function (x) { var u = x.unit || spec.unit; if (units.indexOf(u) < 0) units.push(u); });
    var own = list.filter(function (x) { return !x.base; }).map(function (x) { return col(D, x.key); });
    var nonempty = own.some(nonNull);
    var dataFor = function (st) {
      var d = [xs];
      list.forEach(function (x, j) {
        if (x.base || st.step < 0 || !spec.steps) d.push(col(x.base ? B : D, x.key));
        else d.push(pad(D.step_series[st.step][spec.steps[j]], N));
      });
      return d;
    };
    // A max far above the p99 would flatten the percentiles: hidden until its legend is clicked.
    var hideMax = spec.id === 'latency' && maxOf(col(D, 'lat_max')) > 4 * maxOf(col(D, 'lat_p99'));
    var optsFor = function (st) {
      var scales = { x: { time: false } };
      var axes = [{ font: FONT, values: function (u, v) { return v.map(elapsed); }, space: 60,
        incrs: [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 28800, 86400] }];
      units.forEach(function (u, k) {
        scales[u] = st.log && u === 'ms' ? { distr: 3, log: 10 } : { range: zeroRange };
        axes.push(yAxis(u, FMT[u], k, st.log && u === 'ms'));
      });
      var series = [{ label: 'elapsed', value: function (u, v) { return elapsed(v); } }];
      list.forEach(function (x) {
        var u = x.unit || spec.unit;
        series.push({ label: x.label, scale: u, stroke: x.color, width: x.width || 1.75,
          dash: x.base ? [6, 4] : x.dash, fill: x.fill ? fill(x.color) : undefined,
          paths: x.stepped ? STEPPED : undefined, show: !(hideMax && x.key === 'lat_max' && !x.base),
          points: { show: false }, value: function (p, v) { return FMT[u](v); } });
      });
      return { height: 240, scales: scales, axes: axes, series: series,
        cursor: { sync: { key: 'onrush' }, drag: { x: true, y: false } }, legend: { live: true } };
    };
    var entry = chart(spec.id, parts, optsFor, dataFor, nonempty);
    entry.markers = true;
    if (spec.steps) {
      stepSelect(parts.tools, function (k) { entry.state.step = k; entry.update(); });
      logToggle(parts.tools, false, function (on) { entry.state.log = on; entry.build(); });
    }
    entry.build();
  }

  function distributionChart(spec) {
    var parts = figure(spec, 'Latency distribution', 'latency at each percentile of all requests; x: 1 / (1 − percentile) on a log scale, as HdrHistogram plots');
    var X = D.dist.x, top = X.length ? X[X.length - 1] : 1;
    var dataFor = function (st) {
      var d = [X, st.step < 0 ? D.dist.total : D.dist.steps[st.step]];
      if (B) d.push(B.dist);
      return d;
    };
    var optsFor = function (st) {
      var series = [{ label: 'percentile', value: function (u, v) { return v == null ? '' : pctOfX(v, 2); } },
        { label: 'this run', stroke: C.blue, width: 2, fill: fill(C.blue), points: { show: false }, value: function (u, v) { return ms(v); } }];
      if (B) series.push({ label: 'baseline (all steps)', stroke: C.grey, width: 2, dash: [6, 4], points: { show: false }, value: function (u, v) { return ms(v); } });
      var splits = function () { var a = []; for (var k = 0; k <= Math.floor(top + 1e-9); k++) a.push(k); return a; };
      return { height: 280,
        scales: { x: { time: false, range: [0, Math.max(top, 1) + 0.25] }, y: st.log ? { distr: 3, log: 10 } : { range: zeroRange } },
        axes: [{ font: FONT, splits: splits, values: function (u, v) { return v.map(function (x) { return pctOfX(x); }); } },
          yAxis('y', ms, 0, st.log)],
        series: series, cursor: { drag: { x: false, y: false } }, legend: { live: true } };
    };
    var entry = chart('distribution', parts, optsFor, dataFor, nonNull(D.dist.total));
    // Log scale by default when the tail is far above the median.
    var p50 = D.dist.total[X.indexOf(X.filter(function (x) { return x >= 0.3; })[0])];
    entry.state.log = p50 > 0 && maxOf(D.dist.total) > 20 * p50;
    stepSelect(parts.tools, function (k) { entry.state.step = k; entry.update(); }).title = 'the baseline curve is always all steps';
    logToggle(parts.tools, entry.state.log, function (on) { entry.state.log = on; entry.build(); });
    entry.build();
  }

  SPECS.forEach(function (spec) {
    try {
      if (spec.id === 'distribution') distributionChart(spec); else timeChart(spec);
    } catch (e) {
      errors.push(spec.id + ': ' + (e && e.stack ? e.stack.split('\n')[0] : e));
    }
  });
  // An odd half-width chart at the end takes the whole row.
  var halves = chartsEl.querySelectorAll('.chart:not(.wide)');
  if (halves.length % 2 === 1) {
    halves[halves.length - 1].className += ' wide';
    resize();
  }

  // ---- responsive and print -----------------------------------------------------------------
  var pending = false;
  function resize() {
    pending = false;
    plots.forEach(function (p) {
      var w = width(p.el);
      if (p.plot && Math.abs(p.plot.width - w) > 2) p.plot.setSize({ width: w, height: p.plot.height });
    });
  }
  window.addEventListener('resize', function () {
    if (!pending) { pending = true; requestAnimationFrame(resize); }
  });
  window.addEventListener('beforeprint', function () {
    plots.forEach(function (p) { if (p.plot) p.plot.setSize({ width: 680, height: p.plot.height }); });
  });
  window.addEventListener('afterprint', resize);

  // The live page (live.js) hands the seconds closed since: `chunk` as the live server's
  // /api/seconds gives it (the same series, from second chunk.from on); every chart over
  // time is extended and redrawn. A series that first appears in a chunk (a new failure
  // class) has no line until the page is reloaded. Events are appended to the markers.
  window.onrushCharts = {
    seconds: function () { return D.seconds; },
    append: function (chunk, events) {
      var end = chunk.from + chunk.seconds;
      if (end > D.seconds) {
        Object.keys(chunk.series).forEach(function (k) {
          var dst = D.series[k] || (D.series[k] = []), src = chunk.series[k];
          for (var i = 0; i < src.length; i++) dst[chunk.from + i] = src[i];
        });
        (chunk.step_series || []).forEach(function (st, j) {
          var dst = D.step_series[j];
          if (!dst) return;
          Object.keys(st).forEach(function (k) {
            for (var i = 0; i < st[k].length; i++) dst[k][chunk.from + i] = st[k][i];
          });
        });
        for (var t = N; t < end; t++) xs.push(t);
        D.seconds = N = end;
      }
      if (events) D.events = events;
      plots.forEach(function (p) { if (p.markers && p.plot) p.update(); });
      return end;
    }
  };

  window.addEventListener('error', function () { report(); });
  report();
  if (location.hash === '#onrush-selftest') selftest();

  // Exercises the controls (for the browser test, which cannot click): every step of every
  // selector, the log scales, a resize; then records the outcome in data-selftest.
  function selftest() {
    var done = 0;
    try {
      Array.prototype.forEach.call(chartsEl.querySelectorAll('select'), function (sel) {
        for (var k = -1; k < D.steps.length; k++) {
          sel.value = String(k); sel.dispatchEvent(new Event('change')); done++;
        }
        sel.value = '-1'; sel.dispatchEvent(new Event('change'));
      });
      Array.prototype.forEach.call(chartsEl.querySelectorAll('input[type=checkbox]'), function (box) {
        for (var i = 0; i < 2; i++) { box.checked = !box.checked; box.dispatchEvent(new Event('change')); done++; }
      });
      plots.forEach(function (p) {
        if (p.plot.data[0].length !== p.plot.data[1].length) throw new Error(p.id + ': data lengths differ');
      });
      resize();
    } catch (e) {
      errors.push('selftest: ' + e);
    }
    statusEl.setAttribute('data-selftest', errors.length ? 'failed' : 'ok ' + done);
    report();
  }

  function report() {
    if (!statusEl) return;
    var drawn = plots.filter(function (p) { return p.drawn; }).length;
    statusEl.setAttribute('data-charts', String(plots.length));
    statusEl.setAttribute('data-drawn', String(drawn));
    statusEl.setAttribute('data-nonempty', String(plots.filter(function (p) { return p.drawn && p.nonempty; }).length));
    statusEl.setAttribute('data-ids', plots.map(function (p) { return p.id; }).join(' '));
    statusEl.setAttribute('data-errors', errors.join(' | '));
    if (drawn === plots.length) {
      statusEl.setAttribute('data-draw-ms', (performance.now() - t0).toFixed(1));
      statusEl.setAttribute('data-page-ms', performance.now().toFixed(1));
      statusEl.setAttribute('data-done', '1');
    }
  }
})();
