"""lm-evaluation-harness (pinned in the test venv), unmodified, on two tiny
local tasks (no hub): `local-completions` loglikelihood (echo + logprobs,
lm-eval's multiple-choice requests) with the remote tokenizer it finds
through /tokenizer_info and /tokenize, and `local-chat-completions`
generate_until with the chat template applied by the server. Each
loglikelihood lm-eval reports is checked against the same continuation
scored through /v1/completions prompt_logprobs."""
import json
import math

import pytest

from daemon import Daemon

QUESTIONS = [
    {"question": "The capital of France is", "choices": ["Paris", "banana", "seven"], "answer": 0},
    {"question": "One, two, three, four,", "choices": ["purple", "five", "kitchen"], "answer": 1},
    {"question": "Monday, Tuesday,", "choices": ["Wednesday", "river", "eleven"], "answer": 0},
    {"question": "The sky is", "choices": ["spoon", "carpet", "blue"], "answer": 2},
]
GENERATE = [{"question": "Say the word yes.", "answer": "yes"}, {"question": "Count: 1, 2, 3,", "answer": "4"}]


@pytest.fixture(scope="module")
def served(tessera_bin, smollm2):
    d = Daemon(tessera_bin, [], model=smollm2)
    yield d
    assert d.stop() == 0


def write_tasks(folder):
    (folder / "choice.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    (folder / "generate.jsonl").write_text("".join(json.dumps(q) + "\n" for q in GENERATE))
    (folder / "tessera_choice.yaml").write_text(
        "task: tessera_choice\ndataset_path: json\n"
        f"dataset_kwargs:\n  data_files:\n    test: {folder / 'choice.jsonl'}\n"
        "test_split: test\noutput_type: multiple_choice\n"
        "doc_to_text: '{{question}}'\ndoc_to_choice: '{{choices}}'\ndoc_to_target: '{{answer}}'\n"
        "metric_list:\n  - metric: acc\n")
    (folder / "tessera_generate.yaml").write_text(
        "task: tessera_generate\ndataset_path: json\n"
        f"dataset_kwargs:\n  data_files:\n    test: {folder / 'generate.jsonl'}\n"
        "test_split: test\noutput_type: generate_until\n"
        "doc_to_text: '{{question}}'\ndoc_to_target: '{{answer}}'\n"
        "generation_kwargs:\n  until: ['\\n']\n  max_gen_toks: 8\n  do_sample: false\n  temperature: 0\n"
        "metric_list:\n  - metric: exact_match\n")


def evaluate(model, model_args, task, folder, **kwargs):
    import lm_eval
    from lm_eval.tasks import TaskManager
    return lm_eval.simple_evaluate(model=model, model_args=model_args, tasks=[task], task_manager=TaskManager(include_path=str(folder)),
                                   log_samples=True, **kwargs)


def scored_continuation(daemon, context, continuation):
    """The continuation's log-probability given the context, from prompt_logprobs."""
    ids = lambda text: daemon.post("/tokenize", {"prompt": text, "add_special_tokens": False})[1]["tokens"]
    context_ids, whole = ids(context), ids(context + continuation)
    assert whole[:len(context_ids)] == context_ids
    status, answer = daemon.post("/v1/completions", {"prompt": whole, "max_tokens": 0, "prompt_logprobs": 0})
    assert status == 200, answer
    rows = answer["choices"][0]["prompt_logprobs"]
    return sum(next(iter(rows[i].values()))["logprob"] for i in range(len(context_ids), len(whole)))


def test_lm_eval_loglikelihood_through_local_completions(served, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    write_tasks(tmp_path)
    args = f"model=smollm2,base_url={served.base}/v1/completions,tokenizer_backend=remote,num_concurrent=1,max_retries=1"
    results = evaluate("local-completions", args, "tessera_choice", tmp_path)
    samples = results["samples"]["tessera_choice"]
    assert len(samples) == len(QUESTIONS)
    for sample in samples:
        # lm-eval's own (context, continuation) pairs: the continuation
        # starts with its target delimiter, a space.
        for (context, continuation), response in zip(sample["arguments"], sample["resps"]):
            assert continuation.startswith(" ")
            loglikelihood = response[0][0]
            assert math.isfinite(loglikelihood) and loglikelihood < 0
            assert loglikelihood == pytest.approx(scored_continuation(served, context, continuation), abs=1e-4)
    assert results["results"]["tessera_choice"]["acc,none"] >= 0.75, results["results"]


def test_lm_eval_generate_until_through_local_chat_completions(served, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    write_tasks(tmp_path)
    args = f"model=smollm2,base_url={served.base}/v1/chat/completions,num_concurrent=1,max_retries=1"
    results = evaluate("local-chat-completions", args, "tessera_generate", tmp_path, apply_chat_template=True)
    samples = results["samples"]["tessera_generate"]
    assert len(samples) == len(GENERATE)
    for sample in samples:
        text = sample["resps"][0][0]
        assert isinstance(text, str) and text and "\n" not in text, sample["resps"]
        # The same request made directly gives the same text (greedy).
        status, answer = served.post("/v1/chat/completions", {"messages": [{"role": "user", "content": sample["doc"]["question"]}],
                                                               "max_tokens": 8, "temperature": 0, "stop": ["\n"], "seed": 1234})
        assert status == 200 and answer["choices"][0]["message"]["content"] == text, (answer, text)
    assert "exact_match,none" in results["results"]["tessera_generate"]
