// test_web.mjs — the static page (web/, `make web`) in a real browser: Debian's chromium,
// headless, driven by puppeteer-core. The page is opened from file:// and every answer it
// shows is compared with the CLI's for the same scenario: the estimate JSON
// (`gpuplan estimate --scenario F --json`), the verdict line of its text report, the serving
// curve (`gpuplan serve --scenario F --json`), "what would make it fit" (`gpuplan fit
// --scenario F --json`) and the one-line error of a refused scenario.
// Environment: GPUPLAN_CLI (default build/release/bin/gpuplan), CHROMIUM (default
// /usr/bin/chromium), WEB_SCREENSHOT (where the screenshot goes; default build/web/page.png).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import puppeteer from 'puppeteer-core';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const cli = process.env.GPUPLAN_CLI || path.join(root, 'build', 'release', 'bin', 'gpuplan');
const chromium = process.env.CHROMIUM || '/usr/bin/chromium';
const screenshot = path.resolve(root, process.env.WEB_SCREENSHOT || path.join('build', 'web', 'page.png'));
const page_url = pathToFileURL(path.join(root, 'web', 'index.html')).href;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'gpuplan-web-'));
// Loading and answering the first scenario; a budget for a loaded CI machine, the figure printed.
const LOAD_LIMIT_MS = 5000;

for (const [what, file] of [['the CLI', cli], ['chromium', chromium], ['the page', path.join(root, 'web', 'index.html')]])
  if (!fs.existsSync(file)) {
    console.error(`test_web: ${what} not found (${file}); run make web, or set GPUPLAN_CLI / CHROMIUM`);
    process.exit(1);
  }

let files = 0;
// The CLI on a scenario file: {status, json, text, stderr}.
function gpuplan(args, scenario) {
  const file = path.join(tmp, `scenario-${++files}.json`);
  fs.writeFileSync(file, JSON.stringify(scenario));
  const r = spawnSync(cli, [...args, '--scenario', file], { encoding: 'utf8' });
  const json = args.includes('--json') && r.stdout.trim() ? JSON.parse(r.stdout) : null;
  return { status: r.status, json, text: r.stdout, stderr: r.stderr.trim() };
}

// The line of `gpuplan estimate` (text) that begins with the verdict.
function cli_verdict_line(scenario) {
  const out = gpuplan(['estimate'], scenario).text.split('\n');
  return out.find((l) => /^(FITS|TIGHT|DOES NOT FIT|CANNOT START)/.test(l));
}

const runs = (page) => page.evaluate(() => Number(document.body.dataset.runs || 0));
// Does `action`, then waits until the page has drawn one more answer; returns window.gpuplanResult.
async function answer(page, action) {
  const before = await runs(page);
  await action();
  await page.waitForFunction((n) => Number(document.body.dataset.runs || 0) > n, { timeout: 10000 }, before);
  return page.evaluate(() => window.gpuplanResult);
}
const by_hash = (page, scenario) =>
  answer(page, () => page.evaluate((h) => { location.hash = h; }, '#' + encodeURIComponent(JSON.stringify(scenario))));
const text_of = (page, selector) => page.$eval(selector, (e) => e.textContent);

// The page's answer equals the CLI's, figure for figure.
async function check_same_as_cli(page, result, label) {
  assert.ok(!result.error, `${label}: the page refused it: ${result.error}`);
  const s = result.scenario;
  const est = gpuplan(['estimate', '--json'], s);
  assert.equal(est.status, 0, `${label}: ${est.stderr}`);
  assert.deepEqual(result.estimate, est.json, `${label}: estimate JSON differs from the CLI's`);
  assert.equal(await text_of(page, '#verdict'), cli_verdict_line(s), `${label}: verdict line`);
  const gib = (b) => (b / 2 ** 30).toFixed(2) + ' GiB';
  assert.ok((await text_of(page, '#device-row')).includes(gib(est.json.memory.device_bytes)), `${label}: device row`);
  if (est.json.scenario.workload === 'infer') {
    const serve = gpuplan(['serve', '--json'], s);
    assert.deepEqual(result.serve, serve.json, `${label}: serve JSON differs from the CLI's`);
    const rows = await page.$$eval('#serve-table tbody tr', (trs) => trs.length);
    assert.equal(rows, serve.json.curve.length, `${label}: one table row per point of the curve`);
  } else {
    const fit = gpuplan(['fit', '--json'], s);
    assert.deepEqual(result.suggestions, fit.json.results[0].suggestions, `${label}: suggestions differ from fit --json`);
  }
  console.log(`ok  ${label}: ${est.json.memory.verdict}, device ${gib(est.json.memory.device_bytes)}, ` +
              `step ${est.json.time.step_seconds.toPrecision(4)} s — same as the CLI`);
}

async function check_error(page, scenario, label) {
  const result = await by_hash(page, scenario);
  const cli_run = gpuplan(['estimate', '--json'], scenario);
  assert.equal(cli_run.status, 2, `${label}: the CLI should refuse it`);
  assert.equal(cli_run.stderr.split('\n').length, 1, `${label}: one line`);
  assert.equal(await text_of(page, '#error'), cli_run.stderr, `${label}: the page's error line`);
  assert.equal('gpuplan: ' + result.error, cli_run.stderr);
  console.log(`ok  ${label}: ${cli_run.stderr}`);
}

async function check_accessible(page) {
  const unlabelled = await page.$$eval('input, select, textarea', (els) =>
    els.filter((e) => !document.querySelector(`label[for="${e.id}"]`)).map((e) => e.id || e.name));
  assert.deepEqual(unlabelled, [], 'every control has a label');
  assert.equal(await page.$eval('#result', (e) => e.getAttribute('aria-live')), 'polite');
  // Keyboard only: focus the sequence field, type, Enter submits the form.
  const r = await answer(page, async () => {
    await page.focus('#seq_len');
    await page.keyboard.down('Control'); await page.keyboard.press('KeyA'); await page.keyboard.up('Control');
    await page.keyboard.type('1024');
    await page.keyboard.press('Enter');
  });
  assert.equal(r.scenario.seq_len, 1024, 'the keyboard changed the sequence length');
  console.log('ok  labels on every control, aria-live result, keyboard submit');
}

const browser = await puppeteer.launch({
  executablePath: chromium, headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
try {
  const page = await browser.newPage();
  await page.setViewport({ width: 1200, height: 900 });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  const t0 = Date.now();
  await page.goto(page_url);
  await page.waitForFunction(() => Number(document.body.dataset.runs || 0) >= 1, { timeout: 20000 });
  const load_ms = Date.now() - t0;
  console.log(`ok  loaded from file:// and answered in ${load_ms} ms`);
  assert.ok(load_ms < LOAD_LIMIT_MS, `loading took ${load_ms} ms`);

  // The 13B-on-24GB question is the page's opening scenario, as the form builds it.
  const first = await page.evaluate(() => window.gpuplanResult);
  assert.deepEqual(first.scenario, { model: 'llama-2-13b', gpu: 'rtx-4090', method: 'qlora', seq_len: 2048 });
  await check_same_as_cli(page, first, 'llama-2-13b qlora on rtx-4090, seq 2048');
  fs.mkdirSync(path.dirname(screenshot), { recursive: true });
  await page.screenshot({ path: screenshot, fullPage: true });

  // The form: full fine-tuning of the same model does not fit: what would make it fit.
  const full = await answer(page, () => page.select('#method', 'full'));
  assert.equal(full.estimate.memory.verdict, 'does_not_fit');
  assert.ok(full.suggestions.length > 0 && !(await page.$eval('#suggestions', (e) => e.hidden)));
  await check_same_as_cli(page, full, 'llama-2-13b full on rtx-4090 (form)');

  // By the URL hash: a sharded run, a pasted config.json, and serving with its curve.
  await check_same_as_cli(page, await by_hash(page, {
    model: 'llama-3-8b', gpu: 'a100-80gb', num_gpus: 8, framework: 'fsdp', parallel: { zero: 3 }, micro_batch: 2,
    seq_len: 4096 }), 'llama-3-8b fsdp ZeRO-3 on 8 × a100-80gb');

  // The form again: a pasted config.json (an inline model object), LoRA on a T4; then a paste
  // that is not JSON, refused with the reader's one-line message.
  await answer(page, () => page.select('#gpu', 't4'));
  await answer(page, () => page.select('#method', 'lora'));
  await page.select('#model', '__config');
  const config = { model_type: 'llama', hidden_size: 2048, intermediate_size: 5632, num_hidden_layers: 22,
                   num_attention_heads: 32, num_key_value_heads: 4, vocab_size: 32000, max_position_embeddings: 2048 };
  const paste = (text) => answer(page, () => page.$eval('#config', (e, t) => {
    e.value = t;
    e.dispatchEvent(new Event('change', { bubbles: true }));
  }, text));
  const pasted = await paste(JSON.stringify(config, null, 2));
  assert.deepEqual(pasted.scenario.model, config);
  await check_same_as_cli(page, pasted, 'a pasted config.json with lora on t4 (form)');
  await paste('{"model_type": "llama",');
  assert.match(await text_of(page, '#error'), /^gpuplan: model: malformed JSON in the pasted config.json: parse error at line 1, column 24: [^\n]*$/);
  await check_same_as_cli(page, await by_hash(page, {
    model: 'llama-2-7b', gpu: 'a100-80gb', workload: 'infer', engine: 'vllm',
    inference: { prompt_len: 1024, gen_len: 256, batch: 1 } }), 'llama-2-7b served by vllm on a100-80gb');
  assert.ok(await page.$$eval('#serve-chart polyline', (l) => l.length === 2), 'the curve is drawn');

  // Refused scenarios: the CLI's one-line error.
  await check_error(page, { model: 'llama-2-13b', gpu: 'rtx-4090', num_gpus: 3, parallel: { tp: 3 } }, 'tp 3 on 40 heads');
  await check_error(page, { model: 'llama-2-13x', gpu: 'rtx-4090' }, 'an unknown model');
  await check_error(page, { model: 'llama-2-7b', gpu: 'rtx-4090', seq_len: 0 }, 'seq_len 0');

  // The form after an error answers again.
  await by_hash(page, { model: 'llama-2-13b', gpu: 'rtx-4090', method: 'qlora', seq_len: 2048 });
  await check_accessible(page);
  assert.deepEqual(errors, [], 'no script errors on the page');
  console.log(`test_web: all checks passed (screenshot ${path.relative(root, screenshot)})`);
} finally {
  await browser.close();
  fs.rmSync(tmp, { recursive: true, force: true });
}
