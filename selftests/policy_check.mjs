// SPDX-License-Identifier: GPL-2.0-only
/*
 * deploy/policy's ValidatingAdmissionPolicy evaluated as the API server
 * would (a CEL evaluator: @marcbachmann/cel-js, which tools/deps.sh
 * installs) against example requests with the answer each must get.
 *
 *     node selftests/policy_check.mjs CEL.js POLICY.json REQUESTS.json
 *
 * CEL.js: the evaluator's lib/index.js (an ES module, found by path).
 * POLICY.json: the rendered deploy/policy/ as a JSON list of objects.
 * REQUESTS.json: [{"name", "allow", "request", "object", "oldObject"}].
 * The API server's order: the policy applies when every matchCondition
 * is true; its variables are computed in order (each sees the ones
 * before as variables.<name>); a validation that is false, or that fails
 * to evaluate (failurePolicy Fail), denies.  Prints a line per request
 * that got the wrong answer; exits 1 if any did.
 */
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const { evaluate } = await import(pathToFileURL(process.argv[2]).href);
const objs = JSON.parse(readFileSync(process.argv[3], 'utf8'));
const cases = JSON.parse(readFileSync(process.argv[4], 'utf8'));
const policy = objs.find((o) => o.kind === 'ValidatingAdmissionPolicy');
let wrong = 0;

/* The policy's answer to @c: null (allowed), or why it denied. */
function decide(c) {
	const ctx = { request: c.request, object: c.object, oldObject: c.oldObject,
		      params: null, variables: {} };

	for (const m of policy.spec.matchConditions || [])
		if (evaluate(m.expression, ctx) !== true)
			return null;
	for (const v of policy.spec.variables || [])
		ctx.variables[v.name] = evaluate(v.expression, ctx);
	for (const v of policy.spec.validations) {
		let ok;

		try {
			ok = evaluate(v.expression, ctx);
		} catch (e) {
			return `${v.message} (it did not evaluate: ${e.message})`;
		}
		if (ok !== true)
			return v.message;
	}
	return null;
}

for (const c of cases) {
	let why;

	try {
		why = decide(c);
	} catch (e) {
		why = `an error: ${e.message}`;
	}
	if (c.allow !== (why === null)) {
		console.log(`${c.name}: ${why === null ? 'allowed' : 'denied: ' + why}, ` +
			    `expected ${c.allow ? 'allowed' : 'denied'}`);
		wrong++;
	}
}
console.log(`${cases.length} requests, ${wrong} answered wrong`);
process.exit(wrong ? 1 : 0);
