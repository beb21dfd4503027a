"""Streamed requests that count their outcomes."""
import openai


def stream_once(client, model):
    """One streamed completion: ("complete", text) or ("error", what), exactly one."""
    try:
        text, finish = "", None
        for chunk in client.completions.create(model=model, prompt="Once upon a time", max_tokens=24, temperature=0,
                                               stream=True, extra_body={"ignore_eos": True}):
            if chunk.choices:
                text += chunk.choices[0].text
                finish = chunk.choices[0].finish_reason or finish
        return ("complete", text) if finish == "length" else ("cut", text)
    except openai.APIStatusError as e:
        return ("error", e.status_code)
    except openai.APIError as e:
        return ("error", str(e))
