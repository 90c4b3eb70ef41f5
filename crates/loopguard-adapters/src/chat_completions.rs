//! OpenAI Chat Completions `messages[]`.
