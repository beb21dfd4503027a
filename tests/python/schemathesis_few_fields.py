"""Schemathesis hook (SCHEMATHESIS_HOOKS=schemathesis_few_fields): a body
keeps its required fields, its model and at most two other fields.

Drawn from the whole schema, nearly every body of a generation route
combines a dozen optional fields, one of which almost always breaks a rule
between fields (best_of equal to n, top_logprobs needing logprobs, one
structured-output field at a time) or one that depends on the model's
vocabulary, so the answer is a 400 and generation is never reached. With
few fields, bodies reach generation and their answers are held to the
document's 200 schemas too.
"""
import random

import schemathesis

KEPT = {"model", "messages", "prompt", "input", "max_tokens", "tokens"}


@schemathesis.hook
def map_body(ctx, body):
    if not isinstance(body, dict):
        return body
    rng = random.Random(repr(sorted(body.items(), key=lambda kv: kv[0])))
    others = sorted(k for k in body if k not in KEPT)
    keep = set(rng.sample(others, min(len(others), rng.randint(0, 2))))
    return {k: v for k, v in body.items() if k in KEPT or k in keep}
