// app.js — the page around the WebAssembly module (gpuplan.js, built from web_api.cpp):
// the form builds a scenario (docs/scenario.md), the module answers with the CLI's JSON,
// and the page draws it. Every figure shown comes from that JSON; window.gpuplanResult
// holds the last answer (the browser test compares it with the CLI's --json).
'use strict';
(function () {
  const $ = (id) => document.getElementById(id);
  const GIB = 2 ** 30;
  const DEFAULT_SCENARIO = { model: 'llama-2-13b', gpu: 'rtx-4090', method: 'qlora', seq_len: 2048 };
  const KEEP = '__scenario';  // a select showing a value only the scenario JSON holds
  const PASTE = '__config';
  // The memory terms of memory_json (src/report/estimate_json.cpp), in the CLI's order.
  const TERMS = [
    ['weights_bytes', 'Weights'], ['master_weights_bytes', 'Master weights'], ['gradients_bytes', 'Gradients'],
    ['optimizer_bytes', 'Optimizer state'], ['activations_bytes', 'Activations'], ['kv_cache_bytes', 'KV cache'],
    ['transient_bytes', 'Transient buffers'], ['overhead_bytes', 'Framework overhead'],
  ];
  let gpuplanCall = null;
  let runs = 0;

  // ------------------------------------------------------------------ the module

  function call(command, text) {
    return JSON.parse(gpuplanCall(command, text || ''));
  }

  // ------------------------------------------------------------------ units

  function bytes(b) { return (b / 1e9).toFixed(2) + ' GB (' + (b / GIB).toFixed(2) + ' GiB)'; }
  function gib(b) { return (b / GIB).toFixed(2) + ' GiB'; }
  function sig(v, n) { return Number(v.toPrecision(n)).toLocaleString('en-US', { maximumFractionDigits: 6 }); }
  function seconds(s) {
    if (s === null || s === undefined) return '–';
    if (s < 1e-3) return sig(s * 1e6, 3) + ' µs';
    if (s < 1) return sig(s * 1e3, 3) + ' ms';
    if (s < 120) return sig(s, 3) + ' s';
    if (s < 7200) return sig(s / 60, 3) + ' min';
    if (s < 2 * 86400) return sig(s / 3600, 3) + ' h';
    return sig(s / 86400, 3) + ' days';
  }
  function rate(v, unit) { return (v >= 1e4 ? sig(v / 1e3, 4) + ' k' : sig(v, 4) + ' ') + unit; }
  function pct(v) { return sig(v * 100, 3) + ' %'; }

  // ------------------------------------------------------------------ form <-> scenario

  function fillSelect(sel, values, labels) {
    sel.textContent = '';
    values.forEach((v, i) => sel.add(new Option(labels ? labels[i] : v, v)));
  }
  function setSelect(sel, value) {
    const keep = sel.querySelector('option[value="' + KEEP + '"]');
    if (keep) keep.remove();
    if (typeof value === 'string' && [...sel.options].some((o) => o.value === value)) { sel.value = value; return; }
    sel.add(new Option('(as in the scenario JSON)', KEEP));
    sel.value = KEEP;
  }
  function setNumber(input, value, fallback) { input.value = Number.isInteger(value) ? value : fallback; }
  function number(id) { return Math.max(1, Math.floor(Number($(id).value) || 1)); }

  function showWorkload() {
    const infer = $('workload').value === 'infer';
    document.querySelectorAll('.train-only').forEach((e) => { e.hidden = infer; });
    document.querySelectorAll('.infer-only').forEach((e) => { e.hidden = !infer; });
  }

  function toForm(s) {
    if (s.model !== null && typeof s.model === 'object') {
      $('model').value = PASTE;
      $('config').value = JSON.stringify(s.model, null, 2);
    } else {
      setSelect($('model'), s.model);
    }
    $('config-box').hidden = $('model').value !== PASTE;
    setSelect($('gpu'), s.gpu === undefined ? 'a100-80gb' : s.gpu);
    setNumber($('num_gpus'), s.num_gpus, 1);
    setSelect($('workload'), s.workload || 'train');
    setSelect($('framework'), s.framework || 'hf');
    setSelect($('precision'), s.precision || '');
    setSelect($('method'), s.method || 'full');
    setNumber($('seq_len'), s.seq_len, 2048);
    setNumber($('micro_batch'), s.micro_batch, 1);
    setSelect($('engine'), s.engine || 'hf');
    const inf = s.inference || {};
    setNumber($('prompt_len'), inf.prompt_len, 512);
    setNumber($('gen_len'), inf.gen_len, 512);
    setNumber($('infer_batch'), inf.batch, 1);
    showWorkload();
  }

  // The form's keys over `base` (the scenario JSON as it stands): keys the form does not
  // show are kept. A pasted config.json that is not JSON is the reader's one-line error.
  function fromForm(base) {
    const s = Object.assign({}, base);
    const put = (key, value, unset) => { if (value === unset) delete s[key]; else s[key] = value; };
    const model = $('model').value;
    if (model === PASTE) {
      const parsed = call('check', $('config').value);
      if (parsed.error) throw new Error(parsed.error);
      s.model = parsed.value;
    } else if (model !== KEEP) {
      s.model = model;
    }
    if ($('gpu').value !== KEEP) s.gpu = $('gpu').value;
    put('num_gpus', number('num_gpus'), 1);
    if ($('framework').value !== KEEP) put('framework', $('framework').value, 'hf');
    if ($('precision').value !== KEEP) put('precision', $('precision').value, '');
    if ($('workload').value === 'infer') {
      s.workload = 'infer';
      ['method', 'seq_len', 'micro_batch', 'grad_accum', 'global_batch', 'checkpointing', 'optimizer', 'tokens']
        .forEach((k) => delete s[k]);
      if ($('engine').value !== KEEP) s.engine = $('engine').value;
      s.inference = Object.assign({}, s.inference,
        { batch: number('infer_batch'), prompt_len: number('prompt_len'), gen_len: number('gen_len') });
    } else {
      ['workload', 'engine', 'inference'].forEach((k) => delete s[k]);
      if ($('method').value !== KEEP) s.method = $('method').value;
      s.seq_len = number('seq_len');
      put('micro_batch', number('micro_batch'), 1);
    }
    return s;
  }

  function currentJson() {
    try {
      const s = JSON.parse($('scenario-json').value);
      return s !== null && typeof s === 'object' && !Array.isArray(s) ? s : {};
    } catch (e) {
      return {};
    }
  }

  // ------------------------------------------------------------------ drawing

  function row(tbody, label, value, swatch) {
    const tr = tbody.insertRow();
    const th = document.createElement('th');
    th.scope = 'row';
    if (swatch !== undefined) {
      const sw = document.createElement('span');
      sw.className = 'swatch term-' + swatch;
      sw.setAttribute('aria-hidden', 'true');
      th.append(sw);
    }
    th.append(label);
    tr.append(th);
    tr.insertCell().textContent = value;
    return tr;
  }

  function drawMemory(m) {
    const terms = TERMS.filter(([k]) => (m[k] || 0) > 0);
    const sum = terms.reduce((a, [k]) => a + m[k], 0);
    const scale = Math.max(m.capacity_bytes, m.device_bytes, sum);
    const bar = $('bar');
    bar.textContent = '';
    terms.forEach(([k, label]) => {
      const seg = document.createElement('div');
      seg.className = 'seg term-' + TERMS.findIndex((t) => t[0] === k);
      seg.style.width = (100 * m[k] / scale) + '%';
      seg.title = label + ': ' + bytes(m[k]);
      bar.append(seg);
    });
    [['device', m.device_bytes, 'device'], ['capacity', m.capacity_bytes, 'usable']].forEach(([cls, v, text]) => {
      const mark = document.createElement('div');
      mark.className = 'mark mark-' + cls;
      mark.style.left = (100 * v / scale) + '%';
      mark.dataset.label = text + ' ' + gib(v);
      bar.append(mark);
    });
    bar.setAttribute('aria-label', 'Memory terms per GPU: ' + terms.map(([k, l]) => l + ' ' + gib(m[k])).join(', ') +
      '; device ' + gib(m.device_bytes) + ' of ' + gib(m.capacity_bytes) + ' usable');
    const body = $('memory-table').tBodies[0];
    body.textContent = '';
    terms.forEach(([k, label]) => row(body, label, bytes(m[k]), TERMS.findIndex((t) => t[0] === k)));
    row(body, 'Peak allocated', bytes(m.peak_allocated_bytes));
    row(body, 'Peak reserved', bytes(m.peak_reserved_bytes));
    row(body, 'Device (nvidia-smi)', bytes(m.device_bytes)).id = 'device-row';  // its band: the verdict line
    row(body, 'Usable capacity', bytes(m.capacity_bytes));
    if (m.max_concurrent_sequences !== undefined) row(body, 'Sequences the KV cache holds', String(m.max_concurrent_sequences));
  }

  function drawTime(t, infer) {
    const body = $('time-table').tBodies[0];
    body.textContent = '';
    const band = t.bands.step_seconds;
    if (infer) {
      row(body, 'Time to first token', seconds(t.time_to_first_token_seconds));
      row(body, 'Decode per sequence', rate(t.decode_tokens_per_second_per_sequence, 'tokens/s'));
      row(body, 'Decode, whole batch', rate(t.decode_tokens_per_second, 'tokens/s'));
      return;
    }
    row(body, 'Step time', seconds(t.step_seconds) + ' [P10–P90 ' + seconds(band.p10) + '–' + seconds(band.p90) + ']')
      .id = 'step-row';
    row(body, 'Tokens/s per GPU', rate(t.tokens_per_second_per_gpu, 'tokens/s'));
    row(body, 'Tokens/s, all GPUs', rate(t.tokens_per_second, 'tokens/s'));
    row(body, 'MFU', pct(t.mfu));
    if (t.total_seconds !== null) row(body, 'Time to train', seconds(t.total_seconds));
  }

  function svg(tag, attrs, text) {
    const e = document.createElementNS('http://www.w3.org/2000/svg', tag);
    Object.entries(attrs).forEach(([k, v]) => e.setAttribute(k, v));
    if (text !== undefined) e.textContent = text;
    return e;
  }

  // Total tokens/s (left axis) and inter-token latency (right axis) by concurrency (log2).
  function drawCurve(curve) {
    const chart = $('serve-chart');
    [...chart.querySelectorAll(':not(title)')].forEach((e) => e.remove());
    if (curve.length === 0) return;
    const W = 640, H = 260, L = 64, R = 64, T = 16, B = 40;
    const xs = curve.map((p) => Math.log2(p.concurrency));
    const xmax = Math.max(1, ...xs);
    const x = (v) => L + (W - L - R) * v / xmax;
    const series = [['tokens_per_second', 'total tokens/s', 'line-tps', (v) => sig(v, 3)],
      ['inter_token_latency_s', 'ITL (ms)', 'line-itl', (v) => sig(v * 1e3, 3)]];
    chart.append(svg('line', { x1: L, y1: H - B, x2: W - R, y2: H - B, class: 'axis' }));
    curve.forEach((p, i) => chart.append(svg('text', { x: x(xs[i]), y: H - B + 16, class: 'tick', 'text-anchor': 'middle' },
      String(p.concurrency))));
    chart.append(svg('text', { x: (L + W - R) / 2, y: H - 6, class: 'label', 'text-anchor': 'middle' }, 'concurrent requests'));
    series.forEach(([key, name, cls, fmt], side) => {
      const vmax = Math.max(...curve.map((p) => p[key])) || 1;
      const y = (v) => H - B - (H - B - T) * v / vmax;
      chart.append(svg('polyline', { points: curve.map((p, i) => x(xs[i]) + ',' + y(p[key])).join(' '), class: cls }));
      const ax = side === 0 ? L - 6 : W - R + 6;
      chart.append(svg('text', { x: ax, y: T + 4, class: 'tick ' + cls, 'text-anchor': side === 0 ? 'end' : 'start' }, fmt(vmax)));
      chart.append(svg('text', { x: ax, y: H - B, class: 'tick ' + cls, 'text-anchor': side === 0 ? 'end' : 'start' }, '0'));
      chart.append(svg('text', { x: side === 0 ? 4 : W - 4, y: T + 20, class: 'label ' + cls,
        'text-anchor': side === 0 ? 'start' : 'end' }, name));
    });
  }

  function drawServe(s) {
    $('serve').hidden = !s;
    if (!s) return;
    $('serve-summary').textContent = 'Engine ' + s.engine + ' (' + s.kernel + '): ' +
      (s.paged ? 'KV pool ' + gib(s.pool_bytes) + ' = ' + s.pool_tokens.toLocaleString('en-US') + ' tokens; ' : '') +
      'up to ' + s.max_concurrency + ' concurrent requests; largest single context ' +
      s.largest_context.toLocaleString('en-US') + ' tokens.';
    drawCurve(s.curve);
    const body = $('serve-table').tBodies[0];
    body.textContent = '';
    s.curve.forEach((p) => {
      const tr = body.insertRow();
      [String(p.concurrency), seconds(p.time_to_first_token_s), seconds(p.inter_token_latency_s),
        sig(p.tokens_per_second_per_request, 4), sig(p.tokens_per_second, 4)].forEach((v) => { tr.insertCell().textContent = v; });
    });
  }

  function drawSuggestions(list) {
    const box = $('suggestions');
    const ol = box.querySelector('ol');
    ol.textContent = '';
    box.hidden = !Array.isArray(list);
    if (!Array.isArray(list)) return;
    if (list.length === 0) ol.append(Object.assign(document.createElement('li'), { textContent: 'No single change fits.' }));
    list.forEach((g) => {
      const li = document.createElement('li');
      const a = document.createElement('a');
      a.href = '#' + encodeURIComponent(JSON.stringify(g.scenario));
      a.textContent = g.description;
      li.append(a, ' — needs ' + gib(g.device_bytes) + ' of ' + gib(g.capacity_bytes) +
        (g.step_seconds ? ', step ' + seconds(g.step_seconds) : '') +
        (g.price_per_gpu_hour ? ', $' + sig(g.price_per_gpu_hour, 3) + ' per GPU-hour' : ''));
      ol.append(li);
    });
  }

  function drawResult(r) {
    const e = r.estimate;
    const infer = e.scenario.workload === 'infer';
    const v = $('verdict');
    v.textContent = r.report.verdict;
    v.className = 'verdict verdict-' + e.memory.verdict;
    drawMemory(e.memory);
    drawTime(e.time, infer);
    drawServe(r.serve);
    drawSuggestions(r.suggestions);
    const w = $('warnings');
    w.textContent = '';
    e.warnings.forEach((msg) => w.append(Object.assign(document.createElement('li'), { textContent: 'warning: ' + msg })));
    $('json-out').textContent = JSON.stringify(e, null, 2);
    $('report').textContent = r.report.text;
  }

  // ------------------------------------------------------------------ running

  function finish(result) {
    window.gpuplanResult = result;
    runs += 1;
    document.body.dataset.runs = String(runs);
  }

  function showError(message, scenario) {
    $('answer').hidden = true;
    $('error').hidden = false;
    $('error').textContent = 'gpuplan: ' + message;  // the CLI's line on stderr
    $('status').textContent = 'The scenario was refused.';
    finish({ scenario: scenario, error: message });
  }

  function run(scenario) {
    const text = JSON.stringify(scenario);
    $('scenario-json').value = JSON.stringify(scenario, null, 2);
    const link = '#' + encodeURIComponent(text);
    $('share').href = link;
    history.replaceState(null, '', link);
    const estimate = call('estimate', text);
    if (estimate.error) { showError(estimate.error, scenario); return; }
    const result = { scenario: scenario, estimate: estimate, report: call('report', text), serve: null, suggestions: null };
    if (estimate.scenario.workload === 'infer') result.serve = call('serve', text);
    if (estimate.memory.verdict !== 'fits') result.suggestions = call('suggest', text);
    $('error').hidden = true;
    $('answer').hidden = false;
    $('status').textContent = estimate.model.name + ' on ' + estimate.scenario.num_gpus + ' × ' + estimate.scenario.gpu +
      ' (' + (estimate.scenario.workload === 'infer' ? 'serving' : estimate.scenario.method) + ')';
    drawResult(result);
    finish(result);
  }

  function runForm() {
    try {
      run(fromForm(currentJson()));
    } catch (e) {
      showError(e.message, null);
    }
  }

  function runText(text) {
    let scenario;
    try {
      scenario = JSON.parse(text);
    } catch (e) {
      // The reader's own message for text that is not JSON.
      const r = call('estimate', text);
      showError(r.error || String(e.message), null);
      return;
    }
    if (scenario !== null && typeof scenario === 'object' && !Array.isArray(scenario)) toForm(scenario);
    run(scenario);
  }

  function fromHash() {
    if (location.hash.length <= 1) return null;
    try {
      return decodeURIComponent(location.hash.slice(1));
    } catch (e) {
      return null;
    }
  }

  function start(m) {
    gpuplanCall = m.cwrap('gpuplan_call', 'string', ['string', 'string']);
    const names = call('names');
    const models = call('models');
    const gpus = call('gpus');
    fillSelect($('model'), models.map((x) => x.name).concat([PASTE]),
      models.map((x) => x.name + ' (' + sig(x.parameters / 1e9, 3) + ' B)').concat(['Paste a config.json…']));
    fillSelect($('gpu'), gpus.map((g) => g.id), gpus.map((g) => g.id + ' — ' + g.memory_gb + ' GB'));
    fillSelect($('method'), names.method);
    fillSelect($('framework'), names.framework);
    fillSelect($('engine'), names.engine);
    fillSelect($('precision'), [''].concat(names.precision), ['default (by GPU)'].concat(names.precision));
    $('scenario-form').addEventListener('submit', (ev) => { ev.preventDefault(); runForm(); });
    $('scenario-form').addEventListener('change', (ev) => {
      if (ev.target.id === 'scenario-json') return;
      if (ev.target.id === 'model') $('config-box').hidden = $('model').value !== PASTE;
      showWorkload();
      if ($('model').value !== PASTE || $('config').value.trim() !== '') runForm();  // wait for the paste
    });
    $('run-json').addEventListener('click', () => runText($('scenario-json').value));
    window.addEventListener('hashchange', () => { const t = fromHash(); if (t !== null) runText(t); });
    $('estimate').disabled = false;
    const t = fromHash();
    if (t !== null) { runText(t); return; }
    toForm(DEFAULT_SCENARIO);
    run(DEFAULT_SCENARIO);
  }

  $('estimate').disabled = true;
  createGpuplan().then(start, (e) => { $('status').textContent = 'The estimator did not load: ' + e; });
}());
