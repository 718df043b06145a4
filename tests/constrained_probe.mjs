// Constrained decoding against a real kvmesh cluster (stories260K), checked
// by an independent validator (ajv):
//  * a property test: generated JSON schemas × seeds through
//    response_format json_schema; every answer that finished must parse and
//    validate against its schema;
//  * forced tool calls (OpenAI tool_choice required and named, Anthropic
//    any and tool) with the official SDKs, streamed and not: the call must
//    come back parsed, with arguments that validate against the tool's
//    parameter schema;
//  * a malformed or unsupported schema is a 400 naming the problem.
//
// Usage: node constrained_probe.mjs BASE_URL CI_DIR [SCHEMAS]
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import path from 'node:path';

const [base, ciDir, schemaCount = '150'] = process.argv.slice(2);
const requireFromCi = createRequire(path.join(path.resolve(ciDir), 'package.json'));
const { OpenAI } = requireFromCi('openai');
const { Anthropic } = requireFromCi('@anthropic-ai/sdk');
const Ajv = requireFromCi('ajv').default;
const ajv = new Ajv({ strict: false });
const common = { maxRetries: 0, timeout: 60_000 };
const openai = new OpenAI({ apiKey: 'unused', baseURL: `${base}/v1`, ...common });
const anthropic = new Anthropic({ apiKey: 'unused', baseURL: base, ...common });

// A small seeded generator (mulberry32), so a failure can be replayed.
function rng(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function schemaOf(r, depth) {
  const pick = (xs) => xs[Math.floor(r() * xs.length)];
  const kind = depth >= 3 ? pick(['string', 'integer', 'boolean', 'null', 'enum'])
                          : pick(['object', 'object', 'array', 'string', 'integer', 'boolean',
                                  'enum', 'anyOf', 'const']);
  switch (kind) {
    case 'object': {
      const properties = {};
      const required = [];
      const n = 1 + Math.floor(r() * 3);
      for (let i = 0; i < n; i++) {
        const name = pick(['id', 'name', 'count', 'tags', 'ok', 'kind', 'value', 'items']) + i;
        properties[name] = schemaOf(r, depth + 1);
        if (r() < 0.6) required.push(name);
      }
      return { type: 'object', properties, required, additionalProperties: false };
    }
    case 'array': {
      const minItems = Math.floor(r() * 2);
      return { type: 'array', items: schemaOf(r, depth + 1), minItems, maxItems: minItems + 1 + Math.floor(r() * 3) };
    }
    case 'string':
      return r() < 0.3 ? { type: 'string', pattern: '^[a-z]{1,6}$' }
                       : { type: 'string', minLength: Math.floor(r() * 2), maxLength: 2 + Math.floor(r() * 10) };
    case 'integer': {
      const minimum = Math.floor(r() * 20) - 10;
      return { type: 'integer', minimum, maximum: minimum + Math.floor(r() * 50) };
    }
    case 'boolean':
      return { type: 'boolean' };
    case 'null':
      return { type: 'null' };
    case 'enum':
      return { enum: ['red', 'green', 7, null].slice(0, 2 + Math.floor(r() * 3)) };
    case 'const':
      return { const: pick(['yes', 42, true]) };
    default:
      return { anyOf: [{ type: 'boolean' }, { type: 'integer', minimum: 0, maximum: 9 }] };
  }
}

const checks = [];

checks.push([`property test: ${schemaCount} generated schemas x 2 seeds validate`, async () => {
  let finished = 0, truncated = 0;
  for (let i = 0; i < Number(schemaCount); i++) {
    const schema = schemaOf(rng(1000 + i), 0);
    const validate = ajv.compile(schema);
    for (const seed of [1, 2]) {
      const res = await openai.chat.completions.create({
        model: 'llama', max_tokens: 400, temperature: 1, seed,
        messages: [{ role: 'user', content: 'Answer in JSON.' }],
        response_format: { type: 'json_schema', json_schema: { name: `s${i}`, schema, strict: true } },
      });
      const choice = res.choices[0];
      if (choice.finish_reason === 'length') { truncated++; continue; }
      finished++;
      let value;
      try { value = JSON.parse(choice.message.content); } catch (e) {
        throw new Error(`schema ${i} seed ${seed}: not JSON: ${choice.message.content}\n${JSON.stringify(schema)}`);
      }
      if (!validate(value)) {
        throw new Error(`schema ${i} seed ${seed}: ${choice.message.content} fails ${JSON.stringify(schema)}: ` +
                        JSON.stringify(validate.errors));
      }
    }
  }
  console.log(`# ${finished} answers finished and validated, ${truncated} cut off by max_tokens`);
  assert.ok(finished >= Number(schemaCount), `only ${finished} finished`);
}]);

const weather = {
  type: 'object',
  properties: { city: { type: 'string', maxLength: 12 }, days: { type: 'integer', minimum: 1, maximum: 7 } },
  required: ['city', 'days'], additionalProperties: false,
};
const validWeather = ajv.compile(weather);
const otherTool = { type: 'object', properties: { q: { type: 'string', maxLength: 8 } }, required: ['q'] };
const ask = [{ role: 'user', content: 'What is the weather in Paris?' }];

for (const stream of [false, true]) {
  for (const choice of ['required', { type: 'function', function: { name: 'get_weather' } }]) {
    checks.push([`openai forced tool call (${JSON.stringify(choice)}, ${stream ? 'streamed' : 'whole'})`, async () => {
      const tools = [{ type: 'function', function: { name: 'search', parameters: otherTool } },
                     { type: 'function', function: { name: 'get_weather', parameters: weather } }];
      let call, finish;
      if (stream) {
        const s = await openai.chat.completions.create({ model: 'llama', messages: ask, tools, tool_choice: choice,
                                                         max_tokens: 200, stream: true });
        const calls = [];
        for await (const chunk of s) {
          for (const d of chunk.choices[0]?.delta?.tool_calls ?? []) {
            calls[d.index] ??= { name: '', arguments: '' };
            calls[d.index].name += d.function?.name ?? '';
            calls[d.index].arguments += d.function?.arguments ?? '';
          }
          finish = chunk.choices[0]?.finish_reason ?? finish;
        }
        assert.equal(calls.length, 1);
        call = calls[0];
      } else {
        const res = await openai.chat.completions.create({ model: 'llama', messages: ask, tools, tool_choice: choice,
                                                           max_tokens: 200 });
        finish = res.choices[0].finish_reason;
        assert.equal(res.choices[0].message.tool_calls.length, 1);
        call = res.choices[0].message.tool_calls[0].function;
      }
      assert.equal(finish, 'tool_calls');
      if (typeof choice === 'object') assert.equal(call.name, 'get_weather');
      const args = JSON.parse(call.arguments);
      const ok = call.name === 'get_weather' ? validWeather(args) : ajv.validate(otherTool, args);
      assert.ok(ok, `${call.name}(${call.arguments})`);
    }]);
  }
  for (const choice of [{ type: 'any' }, { type: 'tool', name: 'get_weather' }]) {
    checks.push([`anthropic forced tool use (${JSON.stringify(choice)}, ${stream ? 'streamed' : 'whole'})`, async () => {
      const tools = [{ name: 'search', input_schema: otherTool }, { name: 'get_weather', input_schema: weather }];
      const body = { model: 'llama', max_tokens: 200, messages: ask, tools, tool_choice: choice };
      const message = stream ? await anthropic.messages.stream(body).finalMessage()
                             : await anthropic.messages.create(body);
      assert.equal(message.stop_reason, 'tool_use');
      const uses = message.content.filter((b) => b.type === 'tool_use');
      assert.equal(uses.length, 1);
      if (choice.type === 'tool') assert.equal(uses[0].name, 'get_weather');
      const ok = uses[0].name === 'get_weather' ? validWeather(uses[0].input) : ajv.validate(otherTool, uses[0].input);
      assert.ok(ok, JSON.stringify(uses[0]));
    }]);
  }
}

checks.push(['unsupported schema and unknown forced tool are 400s naming them', async () => {
  await assert.rejects(openai.chat.completions.create({
    model: 'llama', messages: ask,
    response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object', not: {} } } },
  }), (e) => e instanceof OpenAI.BadRequestError && /keyword "not" is not supported/.test(e.message));
  await assert.rejects(openai.chat.completions.create({
    model: 'llama', messages: ask, tools: [{ type: 'function', function: { name: 'a' } }],
    tool_choice: { type: 'function', function: { name: 'b' } },
  }), (e) => e instanceof OpenAI.BadRequestError && /"b", which is not among the offered tools/.test(e.message));
}]);

let failures = 0;
for (const [name, check] of checks) {
  try {
    await check();
    console.log(`ok - ${name}`);
  } catch (error) {
    failures += 1;
    console.log(`not ok - ${name}: ${error?.stack ?? error}`);
  }
}
console.log(failures === 0 ? `all ${checks.length} constrained-decoding checks passed`
                           : `${failures} of ${checks.length} constrained-decoding checks failed`);
process.exit(failures === 0 ? 0 : 1);
