//! The loop history in Redis: beside the sessions, under one hash tag (so that a cluster
//! keeps them on one slot and a script may touch all three keys): a hash of the records
//! (id → [`LoopRecord`] as JSON) and two sorted sets of their ids, by first step (the
//! listing order: equal scores sort by id, as the other stores order them) and by last step
//! (the retention). A step is folded optimistically: the record is read, folded, and
//! written back by a script only if it is still what was read, else read again.

use std::sync::LazyLock;

use redis::{ConnectionLike, RedisResult};

use super::bad_cursor;
use super::redis_store::RedisStore;
use super::StoreError;
use crate::loops::{LoopChange, LoopPage, LoopQuery, LoopRecord, LoopStep};

const RECORDS: &str = "loopguard:loops:{h}:records";
const BY_START: &str = "loopguard:loops:{h}:by-start";
const BY_LAST: &str = "loopguard:loops:{h}:by-last";
/// Attempts at folding one step before the store gives up (a loop's steps come from one
/// session, so two writers rarely race for it).
const ATTEMPTS: usize = 16;

/// Writes `ARGV[3]` as record `ARGV[1]` if the record is still `ARGV[2]` (`""`: absent).
static CAS: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(
        r"
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if cur == false then cur = '' end
if cur ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[5], ARGV[1])
return 1
",
    )
});

impl RedisStore {
    pub(super) fn record_loop_in_redis(&self, step: &LoopStep) -> Result<LoopChange, StoreError> {
        let id = step.loop_id();
        let folded = self.with(
            |c: &mut dyn ConnectionLike| -> RedisResult<Option<LoopChange>> {
                for _ in 0..ATTEMPTS {
                    let current: Option<String> =
                        redis::cmd("HGET").arg(RECORDS).arg(&id).query(c)?;
                    let existing = current
                        .as_deref()
                        .and_then(|t| LoopRecord::from_json(t).ok());
                    let change = LoopRecord::apply(existing, step);
                    let written: i64 = CAS
                        .key(RECORDS)
                        .key(BY_START)
                        .key(BY_LAST)
                        .arg(&id)
                        .arg(current.as_deref().unwrap_or(""))
                        .arg(change.record.to_json())
                        .arg(change.record.first_ms)
                        .arg(change.record.last_ms)
                        .invoke(c)?;
                    if written == 1 {
                        return Ok(Some(change));
                    }
                }
                Ok(None)
            },
        )?;
        folded.ok_or(StoreError::Contended {
            key: id,
            attempts: ATTEMPTS as u32,
        })
    }

    pub(super) fn loops_in_redis(&self, q: &LoopQuery) -> Result<LoopPage, StoreError> {
        let after = q.after().map_err(bad_cursor)?;
        let limit = q.page_size();
        let min = after.as_ref().map_or(0, |(ms, _)| *ms);
        self.with(|c: &mut dyn ConnectionLike| -> RedisResult<LoopPage> {
            let mut out = Vec::new();
            let mut offset = 0usize;
            const BATCH: usize = 500;
            loop {
                let ids: Vec<(String, u64)> = redis::cmd("ZRANGEBYSCORE")
                    .arg(BY_START)
                    .arg(min)
                    .arg("+inf")
                    .arg("WITHSCORES")
                    .arg("LIMIT")
                    .arg(offset)
                    .arg(BATCH)
                    .query(c)?;
                offset += ids.len();
                let wanted: Vec<&String> = ids
                    .iter()
                    .filter(|(id, ms)| {
                        after
                            .as_ref()
                            .is_none_or(|(a_ms, a_id)| *ms > *a_ms || id > a_id)
                    })
                    .map(|(id, _)| id)
                    .collect();
                if !wanted.is_empty() {
                    let texts: Vec<Option<String>> =
                        redis::cmd("HMGET").arg(RECORDS).arg(&wanted).query(c)?;
                    for text in texts.into_iter().flatten() {
                        match LoopRecord::from_json(&text) {
                            Ok(r) if r.matches(q) => out.push(r),
                            Ok(_) => {}
                            Err(e) => tracing::warn!(target: "loopguard::store", "a loop record in Redis is unreadable and left out: {e}"),
                        }
                        if out.len() > limit {
                            return Ok(LoopPage::cut(out, limit));
                        }
                    }
                }
                if ids.len() < BATCH {
                    return Ok(LoopPage::cut(out, limit));
                }
            }
        })
    }

    pub(super) fn prune_loops_in_redis(&self, before_ms: u64) -> Result<u64, StoreError> {
        self.with(|c: &mut dyn ConnectionLike| -> RedisResult<u64> {
            let mut n = 0u64;
            loop {
                let ids: Vec<String> = redis::cmd("ZRANGEBYSCORE")
                    .arg(BY_LAST)
                    .arg("-inf")
                    .arg(format!("({before_ms}"))
                    .arg("LIMIT")
                    .arg(0)
                    .arg(1000)
                    .query(c)?;
                if ids.is_empty() {
                    return Ok(n);
                }
                redis::cmd("HDEL").arg(RECORDS).arg(&ids).query::<()>(c)?;
                redis::cmd("ZREM").arg(BY_START).arg(&ids).query::<()>(c)?;
                redis::cmd("ZREM").arg(BY_LAST).arg(&ids).query::<()>(c)?;
                n += ids.len() as u64;
            }
        })
    }
}
