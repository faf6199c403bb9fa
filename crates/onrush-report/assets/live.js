/* onrush live page: the report of the run so far (report.js drew it), kept current from the
   live server — /api/status every second for the live bar, /api/seconds for the charts' new
   seconds — and the controls, which call the same API a script would (docs/live.md). */
(function () {
  'use strict';
  var stateEl = document.getElementById('live-state');
  var controlsEl = document.getElementById('live-controls');
  var nowEl = document.getElementById('live-now');
  var chip = document.getElementById('live-chip');
  if (!stateEl) return;
  var token = (/(?:^|[#&])token=([0-9A-Za-z_-]+)/.exec(location.hash) || [])[1] || '';
  var charts = window.onrushCharts;
  var last = null, fetching = false, lost = 0, reloading = false, built = false;

  function headers(json) {
    var h = {};
    if (token) h.Authorization = 'Bearer ' + token;
    if (json) h['Content-Type'] = 'application/json';
    return h;
  }
  function esc(s) {
    return String(s).replace(/[&<>"]/g, function (c) { return { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' }[c]; });
  }
  function n(v) { return v == null ? '–' : Number(v).toLocaleString('en-US'); }
  function ms(v) { return v == null ? '–' : (v >= 1000 ? (v / 1000).toFixed(2) + ' s' : (+v.toFixed(3)) + ' ms'); }
  function clock(s) {
    s = Math.round(s || 0);
    var m = Math.floor(s / 60), x = s % 60;
    return m + ':' + (x < 10 ? '0' : '') + x;
  }

  function post(path, body) {
    return fetch(path, { method: 'POST', headers: headers(!!body), body: body ? JSON.stringify(body) : undefined })
      .then(function (r) { return r.json().then(function (j) { return { ok: r.ok, body: j }; }); })
      .then(function (r) {
        note(r.ok ? r.body.detail : 'refused: ' + r.body.error, !r.ok);
        poll();
      })
      .catch(function (e) { note('the run\'s server did not answer: ' + e, true); });
  }
  function note(text, bad) {
    var el = document.getElementById('live-note');
    if (!el) return;
    el.textContent = text;
    el.className = bad ? 'warn' : 'note';
  }

  function button(label, id, onClick) {
    var b = document.createElement('button');
    b.type = 'button'; b.id = id; b.textContent = label;
    b.addEventListener('click', onClick);
    return b;
  }

  // The controls, made once from the first status (the scenarios do not change).
  function buildControls(s) {
    built = true;
    controlsEl.innerHTML = '';
    if (!s.control) {
      controlsEl.innerHTML = '<p class="note">Read-only: this page was opened without the run\'s token (the server is not on a loopback address). Open the URL onrush printed, with its <code>#token=</code>.</p>';
      return;
    }
    var row = document.createElement('div');
    row.className = 'live-buttons';
    row.appendChild(button('Pause', 'live-pause', function () { post('/api/pause'); }));
    row.appendChild(button('Resume', 'live-resume', function () { post('/api/resume'); }));
    var stop = button('Stop', 'live-stop', function () {
      // Two clicks: a stop cannot be undone.
      if (stop.dataset.armed) { post('/api/stop'); return; }
      stop.dataset.armed = '1'; stop.textContent = 'Click again to stop';
      setTimeout(function () { delete stop.dataset.armed; stop.textContent = 'Stop'; }, 4000);
    });
    row.appendChild(stop);
    controlsEl.appendChild(row);
    var table = document.createElement('table');
    table.className = 'data';
    table.innerHTML = '<thead><tr><th>scenario</th><th>load now</th><th>change</th></tr></thead>';
    var body = document.createElement('tbody');
    s.scenarios.forEach(function (sc) {
      var tr = document.createElement('tr');
      tr.innerHTML = '<td>' + esc(sc.name) + '</td><td class="live-load"></td><td></td>';
      var cell = tr.lastChild;
      if (sc.steer === 'fixed') {
        cell.textContent = 'a fixed number of iterations: cannot change';
      } else {
        var input = document.createElement('input');
        input.size = 8;
        input.id = 'live-set-' + sc.name;
        input.placeholder = sc.steer === 'rate' ? 'e.g. 200/s' : 'e.g. 20';
        input.setAttribute('aria-label', sc.steer === 'rate' ? 'new rate of ' + sc.name : 'new VUs of ' + sc.name);
        cell.appendChild(input);
        cell.appendChild(button(sc.steer === 'rate' ? 'Set rate' : 'Set VUs', 'live-apply-' + sc.name, function () {
          var v = input.value.trim();
          if (!v) return;
          var body = sc.steer === 'rate' ? { rate: /\//.test(v) ? v : Number(v) } : { vus: Number(v) };
          post('/api/scenarios/' + encodeURIComponent(sc.name) + '/load', body);
        }));
      }
      body.appendChild(tr);
    });
    table.appendChild(body);
    controlsEl.appendChild(table);
    var p = document.createElement('p');
    p.id = 'live-note'; p.className = 'note';
    controlsEl.appendChild(p);
  }

  function render(s) {
    var fail = s.requests ? (100 * s.failures / s.requests) : 0;
    stateEl.setAttribute('data-state', s.state);
    stateEl.setAttribute('data-requests', String(s.requests));
    stateEl.setAttribute('data-failures', String(s.failures));
    stateEl.setAttribute('data-second', s.second == null ? '' : String(s.second));
    stateEl.innerHTML = '<b class="live-' + esc(s.state) + '">' + esc(s.state.toUpperCase()) + '</b> · ' +
      clock(s.elapsed_s) + (s.planned_s ? ' of ' + clock(s.planned_s) : '') + ' · <b>' + n(s.rate) + '</b> req/s · ' +
      n(s.requests) + ' requests · ' + n(s.failures) + ' failures (' + (+fail.toFixed(2)) + '%) · ' +
      n(s.connections_opened) + ' connections opened';
    if (!built) buildControls(s);
    var loads = controlsEl.querySelectorAll('.live-load');
    s.scenarios.forEach(function (sc, k) {
      if (!loads[k]) return;
      var set = sc.rate_set != null ? 'rate set to ' + sc.rate_set + '/s' : sc.vus_set != null ? sc.vus_set + ' VUs set' : 'as planned';
      loads[k].textContent = set + ' · ' + n(sc.active_vus) + ' VUs active · ' + n(sc.iterations_last_second) + ' it/s' +
        (sc.dropped_iterations ? ' · ' + n(sc.dropped_iterations) + ' dropped' : '');
    });
    var rows = s.steps.map(function (st) {
      var l = st.latency_ms;
      return '<tr><td>' + esc(st.scenario) + '</td><td>' + esc(st.step) + '</td><td class="num">' + n(st.rate) +
        '</td><td class="num">' + n(st.requests) + '</td><td class="num">' + n(st.failures) + '</td><td class="num">' +
        ms(l.p50) + '</td><td class="num">' + ms(l.p90) + '</td><td class="num">' + ms(l.p95) + '</td><td class="num">' +
        ms(l.p99) + '</td><td class="num">' + ms(l.p999) + '</td><td class="num">' + ms(l.max) + '</td></tr>';
    }).join('');
    var classes = Object.keys(s.failures_by_class).map(function (c) {
      return esc(c) + ': ' + n(s.failures_by_class[c]);
    }).join(' · ');
    nowEl.innerHTML = '<table class="data" id="live-steps"><thead><tr><th>scenario</th><th>step</th><th>req/s now</th><th>requests</th><th>failures</th><th>p50</th><th>p90</th><th>p95</th><th>p99</th><th>p99.9</th><th>max</th></tr></thead><tbody>' +
      rows + '</tbody></table><p class="note">Latency since the start, exact (the figures summary.json will have); req/s: the last second closed.' +
      (classes ? ' Failures by class: ' + classes + '.' : '') + '</p>';
    var th = (s.thresholds || []).map(function (t) {
      return '<li class="' + (t.passed ? 'pass' : 'fail') + '">' + (t.passed ? '✔ ' : '✘ ') + esc(t.threshold) +
        ' <span class="note">(' + esc(t.scope) + ': ' + esc(t.measured_text) + ')</span></li>';
    }).concat((s.thresholds_at_end || []).map(function (t) {
      return '<li>' + esc(t) + ' <span class="note">(judged at the end: it needs the run\'s histograms)</span></li>';
    }));
    var g = s.generator;
    nowEl.innerHTML += (th.length ? '<h3>Thresholds so far</h3><ul id="live-thresholds" class="live-thresholds">' + th.join('') + '</ul>' : '') +
      '<p id="live-generator" class="note">Load generator: <b>' + esc(s.generator_verdict || '–') + '</b>' +
      (g ? ' · CPU ' + (g.cpu_percent == null ? '–' : Math.round(g.cpu_percent) + '%') + ' · schedule lag p99 ' +
        ms(g.schedule_lag_p99_ms) + ' · ' + n(g.dropped_iterations) + ' dropped/s · ' + Math.round(g.rss_mb) + ' MB' : '') +
      (s.generator_message ? ' — ' + esc(s.generator_message) : '') + '</p>';
    if (chip) chip.textContent = 'live: ' + s.state + ', charts kept current';
    if (s.state === 'finished' && s.report && !reloading) {
      // The final report (the same page, from the finished results).
      reloading = true;
      location.reload();
    }
  }

  // events.jsonl's events as the charts' markers (the report's own, events.rs, label them
  // the same way).
  function markers(events) {
    return (events || []).map(function (e) {
      var label = e.rate != null ? 'rate ' + e.rate + '/s (' + e.scenario + ')'
        : e.vus != null ? e.vus + ' VUs (' + e.scenario + ')' : e.kind;
      return { t: e.t, kind: e.kind, label: label };
    });
  }

  function poll() {
    if (fetching) return;
    fetching = true;
    fetch('/api/status', { headers: headers(false), cache: 'no-store' })
      .then(function (r) { return r.json(); })
      .then(function (s) {
        lost = 0;
        last = s;
        render(s);
        if (charts && s.second != null && s.second >= charts.seconds()) {
          return fetch('/api/seconds?from=' + charts.seconds(), { cache: 'no-store' })
            .then(function (r) { return r.json(); })
            .then(function (chunk) { charts.append(chunk, markers(s.events)); });
        }
      })
      .catch(function () {
        if (++lost >= 3) {
          stateEl.setAttribute('data-state', 'gone');
          stateEl.innerHTML = '<b>SERVER GONE</b> · the run\'s server no longer answers: this page shows the run as it was last reached' +
            (last ? ' (second ' + last.second + ')' : '');
        }
      })
      .then(function () { fetching = false; });
  }
  poll();
  setInterval(poll, 1000);
})();
