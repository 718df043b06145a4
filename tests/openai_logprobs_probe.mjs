// Logprobs, echo and n over the OpenAI API on the default model
// (stories260K, F32 weights, KV f16), against references:
//   1. /v1/completions with logprobs: 10, greedy, from golden prompts: every
//      generated token and its top-10 logprobs against llama.cpp's
//      (../shared/golden/stories260K/generate_greedy_top10_logprobs.json);
//      the same request streamed gives the same logprobs.
//   2. echo + logprobs + max_tokens 0 on a chunk of the held-out text: the
//      prompt's log-likelihood over the positions `kvmesh perplexity` scores
//      equals its -n_scored·ln(ppl).
//   3. n = 4: four choices, the prompt computed once (the workers'
//      kvmesh_worker_prefill_tokens_total rises by the prompt's tokens).
// Usage: node openai_logprobs_probe.mjs URL CI_DIR KVMESH_BINARY SHARED_DIR
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";

const [url, , kvmesh, shared] = process.argv.slice(2);
const fail = (message) => { console.error("FAIL: " + message); process.exit(1); };

async function post(path, body) {
  const res = await fetch(url + path, {
    method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status !== 200) fail(`${path} → ${res.status}: ${text}`);
  return text;
}

// 1. Generated tokens' logprobs against llama.cpp.
const golden = JSON.parse(readFileSync(
  `${shared}/golden/stories260K/generate_greedy_top10_logprobs.json`, "utf8"));
const piece = (p) => p.replaceAll("\u2581", " ").replace(/^<0x0A>$/, "\n");
let maxDelta = 0, compared = 0;
const deltas = [];
for (const c of golden) {
  const request = { prompt: c.prompt_tokens, max_tokens: c.steps.length, temperature: 0,
                    logprobs: 10 };
  const whole = JSON.parse(await post("/v1/completions", request));
  const lp = whole.choices[0].logprobs;
  const n = Math.min(lp.tokens.length, c.steps.length);
  if (n < 1) fail(`no tokens for "${c.prompt}"`);
  for (let i = 0; i < n; ++i) {
    const step = c.steps[i];
    if (lp.tokens[i] !== piece(step.top[0].piece) && step.top[0].token === step.token) {
      fail(`"${c.prompt}" step ${i}: token ${JSON.stringify(lp.tokens[i])}, llama.cpp ${JSON.stringify(step.top[0].piece)}`);
    }
    let delta = Math.abs(lp.token_logprobs[i] - step.logprob);
    const ours = Object.values(lp.top_logprobs[i]).sort((a, b) => b - a).slice(0, 10);
    const theirs = step.top.map((t) => t.logprob);
    for (let k = 0; k < 10; ++k) delta = Math.max(delta, Math.abs(ours[k] - theirs[k]));
    deltas.push(delta);
    maxDelta = Math.max(maxDelta, delta);
    ++compared;
  }
  // The same request streamed.
  const sse = await post("/v1/completions", { ...request, stream: true });
  const streamed = [];
  for (const line of sse.split("\n")) {
    if (!line.startsWith("data: {")) continue;
    const chunk = JSON.parse(line.slice(6));
    for (const choice of chunk.choices) {
      if (choice.logprobs) streamed.push(...choice.logprobs.token_logprobs);
    }
  }
  if (JSON.stringify(streamed) !== JSON.stringify(lp.token_logprobs)) {
    fail(`"${c.prompt}": streamed logprobs differ from the whole response`);
  }
}
deltas.sort((a, b) => a - b);
const median = deltas[Math.floor(deltas.length / 2)];
console.log(`logprobs: ${compared} positions × top-10 against llama.cpp, max |Δ| ${maxDelta.toExponential(2)}, median per position ${median.toExponential(2)}`);
// With an f16 KV cache llama.cpp also rounds Q and the softmax weights to
// f16 (../shared/golden README); kvmesh keeps them f32, which moves logits
// by up to ~0.02 at |logit| ~18. The engine's own teacher-forcing test
// (golden_model_test) shows the same bound.
if (maxDelta > 0.03) fail(`logprobs differ from llama.cpp's by ${maxDelta}`);

// 2. echo + logprobs + max_tokens 0 against `kvmesh perplexity` on one chunk.
const ctx = 256;
const evalFile = `${shared}/models/tinystories-eval.txt`;
const ids = execFileSync(kvmesh, ["tokenize", "-f", evalFile], { encoding: "utf8" })
  .trim().split(/[\s,\[\]]+/).filter((s) => s.length > 0).map(Number);
if (ids.length < ctx || ids.some(Number.isNaN)) fail("could not tokenize the eval text");
const chunk = ids.slice(0, ctx);
chunk[0] = 1;  // perplexity's convention: the chunk's first token is BOS
const scored = JSON.parse(await post("/v1/completions",
  { prompt: chunk, echo: true, logprobs: 0, max_tokens: 0 }));
const prompt = scored.choices[0].logprobs.token_logprobs;
if (prompt.length !== ctx || prompt[0] !== null) fail(`echo returned ${prompt.length} prompt logprobs`);
// perplexity scores logits rows ctx/2 … ctx-2, i.e. tokens ctx/2+1 … ctx-1.
let sum = 0;
for (let i = ctx / 2 + 1; i < ctx; ++i) sum += prompt[i];
const ppl = JSON.parse(execFileSync(kvmesh, ["perplexity", "-f", evalFile, "-c", String(ctx),
  "--chunks", "1", "--kv-type", "f16", "--json"], { encoding: "utf8" }).trim().split("\n").pop());
const reference = -ppl.n_scored * Math.log(ppl.ppl);
console.log(`echo: log-likelihood of ${ppl.n_scored} scored tokens ${sum.toFixed(4)}, kvmesh perplexity ${reference.toFixed(4)} (ppl ${ppl.ppl})`);
if (ppl.n_scored !== ctx / 2 - 1) fail(`perplexity scored ${ppl.n_scored} tokens`);
if (Math.abs(sum - reference) > 1e-3 * Math.abs(reference)) fail("echo log-likelihood differs from perplexity's");
const cached = JSON.parse(await post("/v1/completions",
  { prompt: chunk, echo: true, logprobs: 0, max_tokens: 0 }));
if (JSON.stringify(cached.choices[0].logprobs.token_logprobs) !== JSON.stringify(prompt)) {
  fail("a repeated echo (prefix cached) returned different prompt logprobs");
}

// Echo of a text prompt: the text is the prompt as given, and every
// text_offset points at its token in that text.
const echoed = JSON.parse(await post("/v1/completions",
  { prompt: "Once upon a time", echo: true, logprobs: 1, max_tokens: 6, temperature: 0 }));
const ec = echoed.choices[0];
if (!ec.text.startsWith("Once upon a time")) fail(`echo text ${JSON.stringify(ec.text)}`);
ec.logprobs.tokens.forEach((t, i) => {
  const at = ec.logprobs.text_offset[i];
  if (ec.text.slice(at, at + t.length) !== t) fail(`echo token ${i} ${JSON.stringify(t)} is not at text_offset ${at}`);
});
console.log(`echo text: ${JSON.stringify(ec.text)}, ${ec.logprobs.tokens.length} tokens at their offsets`);

// 3. n = 4 from one prefill.
const workers = (process.env.KVMESH_WORKER_HTTP || "").split(",").filter(Boolean);
if (workers.length === 0) fail("KVMESH_WORKER_HTTP is not set");
async function prefilled() {
  let total = 0;
  for (const w of workers) {
    const text = await (await fetch(`http://${w}/metrics`)).text();
    const m = text.match(/^kvmesh_worker_prefill_tokens_total (\S+)/m);
    if (!m) fail(`worker ${w} exports no kvmesh_worker_prefill_tokens_total`);
    total += Number(m[1]);
  }
  return total;
}
const before = await prefilled();
const four = JSON.parse(await post("/v1/completions", {
  prompt: "Once upon a time, in a quiet town by the sea, there lived a girl who", n: 4,
  max_tokens: 24, temperature: 1, seed: 11, cache_salt: `probe-${Date.now()}` }));
const after = await prefilled();
const texts = four.choices.map((c) => c.text);
console.log(`n=4: ${four.choices.length} choices (${new Set(texts).size} distinct), prompt ${four.usage.prompt_tokens} tokens, prefill computed ${after - before} tokens, completion_tokens ${four.usage.completion_tokens}`);
if (four.choices.length !== 4) fail("n=4 returned " + four.choices.length + " choices");
if (after - before !== four.usage.prompt_tokens) fail("the prompt was not computed exactly once");
console.log("PASS");
