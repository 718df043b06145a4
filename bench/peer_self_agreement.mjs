#!/usr/bin/env node
// peer_self_agreement.mjs - how far llama.cpp's next-token predictions move
// when nothing changes but how its tokens are batched. It is the noise floor
// of bench/synthetic_agreement.sh, which compares kvmesh (teacher-forced, one
// batch) with llama.cpp's greedy decode.
//
// For one model and prompt, through node-llama-cpp (the same package as
// ../shared/peer/llamacpp_peer.mjs):
//   decode  : [BOS] + prompt as one batch, then S greedy steps one token at a
//             time; the argmax and top-k log-probabilities at every step.
//   batch   : the same S positions evaluated in one batch (prompt and the
//             decode's own tokens, teacher forcing), as kvmesh is measured;
//             top-1 agreement with the decode and the largest |d logprob| of
//             the decode's top-k.
//   ubatch1 : a context whose batch size is 1, so the prompt goes through the
//             decode path token by token; the first step where its greedy path
//             parts from the decode's.
// Prints one JSON line.
//
//   cd ~/nlc && node /path/to/bench/peer_self_agreement.mjs --model F --prompt P [--steps 64]
//       [-k 10] [--threads 2]
import {createRequire} from "node:module";
import {pathToFileURL} from "node:url";
import path from "node:path";
import process from "node:process";

async function loadNodeLlamaCpp() {
    const base = process.env.NLC_DIR ?? process.cwd();
    const req = createRequire(path.join(path.resolve(base), "__resolve__.js"));
    let resolved;
    try {
        resolved = req.resolve("node-llama-cpp");
    } catch {
        console.error(`node-llama-cpp not found under ${base}; run from its install folder or set NLC_DIR`);
        process.exit(2);
    }
    return await import(pathToFileURL(resolved).href);
}

function parseArgs(argv) {
    const opts = {steps: 64, k: 10, threads: 2};
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i];
        const next = () => {
            if (i + 1 >= argv.length) throw new Error(`missing value for ${a}`);
            return argv[++i];
        };
        switch (a) {
            case "--model": case "-m": opts.model = next(); break;
            case "--prompt": opts.prompt = next(); break;
            case "--steps": opts.steps = parseInt(next(), 10); break;
            case "-k": opts.k = parseInt(next(), 10); break;
            case "--threads": case "-t": opts.threads = parseInt(next(), 10); break;
            default: throw new Error(`unknown argument ${a}`);
        }
    }
    if (opts.model === undefined || opts.prompt === undefined) throw new Error("--model and --prompt are required");
    if (!(opts.steps >= 1 && opts.k >= 1 && opts.threads >= 1)) throw new Error("--steps, -k and --threads must be >= 1");
    return opts;
}

// The k most likely tokens of a probability map (node-llama-cpp sorts it).
function topOf(probabilities, k) {
    const top = [];
    for (const [token, prob] of probabilities) {
        top.push({token, logprob: Math.log(prob)});
        if (top.length >= k) break;
    }
    return top;
}

async function greedy(model, prompt, opts, batchSize) {
    const context = await model.createContext({
        contextSize: 512, batchSize, threads: opts.threads, sequences: 1, flashAttention: false
    });
    const sequence = context.getSequence();
    const steps = [];
    for await (const out of sequence.evaluateWithMetadata(prompt, {probabilities: true}, {temperature: 0})) {
        steps.push({argmax: out.token, top: topOf(out.probabilities, opts.k)});
        if (steps.length >= opts.steps || model.isEogToken(out.token)) break;
    }
    await context.dispose();
    return steps;
}

async function teacherForced(model, prompt, decode, opts) {
    const context = await model.createContext({
        contextSize: 512, batchSize: 512, threads: opts.threads, sequences: 1, flashAttention: false
    });
    const sequence = context.getSequence();
    const tokens = [...prompt, ...decode.slice(0, -1).map((s) => s.argmax)];
    const input = tokens.map((t, i) =>
        i < prompt.length - 1 ? t : [t, {generateNext: {probabilities: true}}]);
    const outputs = await sequence.controlledEvaluate(input);
    const steps = [];
    for (let i = prompt.length - 1; i < tokens.length; i++) {
        const probabilities = outputs[i]?.next?.probabilities;
        if (probabilities === undefined) throw new Error(`no probabilities at position ${i}`);
        steps.push(probabilities);
    }
    await context.dispose();
    return steps;
}

async function main() {
    let opts;
    try {
        opts = parseArgs(process.argv.slice(2));
    } catch (e) {
        console.error(e.message);
        process.exit(2);
    }
    const {getLlama, LlamaLogLevel} = await loadNodeLlamaCpp();
    const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error});
    const model = await llama.loadModel({modelPath: path.resolve(opts.model)});
    const bos = model.tokens.bos;
    const text = model.tokenize(opts.prompt, false);
    const prompt = bos != null && model.tokens.shouldPrependBosToken ? [bos, ...text] : text;

    const decode = await greedy(model, prompt, opts, 512);
    const batch = await teacherForced(model, prompt, decode, opts);
    const ubatch1 = await greedy(model, prompt, opts, 1);

    let agree = 0, firstDisagreement = -1, maxAbs = 0;
    decode.forEach((step, i) => {
        const probabilities = batch[i];
        const argmax = probabilities.entries().next().value[0];
        if (argmax === step.argmax) agree++;
        else if (firstDisagreement < 0) firstDisagreement = i;
        for (const {token, logprob} of step.top) {
            const p = probabilities.get(token);
            if (p !== undefined) maxAbs = Math.max(maxAbs, Math.abs(Math.log(p) - logprob));
        }
    });
    const split = decode.findIndex((step, i) => i >= ubatch1.length || ubatch1[i].argmax !== step.argmax);
    console.log(JSON.stringify({
        model: path.basename(opts.model), prompt: opts.prompt, steps: decode.length,
        batch_top1_agree: agree, batch_first_disagreement: firstDisagreement,
        batch_max_abs_dlogprob: maxAbs, ubatch1_first_split: split
    }));
    await model.dispose();
    await llama.dispose();
}

main().catch((e) => {
    console.error(e?.stack ?? String(e));
    process.exit(1);
});
