//! Sessions in Redis (or Valkey), shared by every replica of a front end.
//!
//! **Key layout** (format 2). One string key per session, `loopguard:2:{<tenant>/<session>}`
//! (the braces are a Redis Cluster hash tag, so a session's key has one slot), whose value
//! is a version token of 16 bytes that changes on every write, followed by
//! [`SessionEntry::encode`]'s bytes (the engine state, the counters of every event ever
//! applied, the recent decisions, the front end's bookkeeping). Every write sets the key's
//! expiry to the idle TTL again; an idle session expires on its own. Format 1 (loopguard
//! builds before this one: a hash `loopguard:{…}` with fields `v` and `e`) is neither read nor
//! written: the two formats have different key names, so replicas of either version never
//! misread the other's data, and a session touched by both is counted separately by each
//! until the old key expires (docs/serve.md, "Upgrading").
//!
//! **Consistency.** Updates are optimistic: the value is read (`GET`), the event applied,
//! and the result written by a Lua script that compares the stored token (`GETRANGE` of
//! its first 16 bytes) and writes only if it is still the one read, with a
//! plain `SET … PX` (compare-and-set, atomic in Redis). When another
//! replica wrote in between, the script answers the current value instead, and
//! the update starts again from it, up to [`RedisOptions::max_attempts`] times (each
//! retry is counted, see [`RedisStore::retries`]); then [`StoreError::Contended`]. So every
//! acknowledged event of a session was applied exactly once, on top of every event
//! acknowledged before it, whichever replica handled it. Tokens are unique per write
//! (a hash of the process, its start and 64 random bits, then a counter), so a session
//! deleted and written again never matches an old token. Inside one process, updates of the same session take turns (a lock striped by
//! key), so races, and retries after a short jittered pause, only happen between
//! replicas. A replica keeps the entry it wrote last and its token (bounded by
//! [`RedisOptions::cache_entries`], the least recently written dropped first) and sends the
//! compare-and-set from it directly, as one `EVALSHA`: while no other replica touched the
//! session, an update is one round trip and no decoding; when one did, the script answers
//! the current entry and the update is retried from it, so a stale entry is never written.
//! Durability is Redis's own: an event acknowledged by a primary that fails before
//! replicating it can be lost.
//!
//! **Connections.** The awaitable side ([`AsyncStore`], what `loopguard serve` uses)
//! multiplexes every request of the process over one connection (redis' connection
//! manager, which reconnects by itself), so no thread waits per request; on a single node,
//! the compare-and-sets of concurrent updates leave in batches, one pipeline a round trip,
//! each still its own atomic script (see `Batch`). The blocking side ([`Store`]) keeps a
//! small pool of connections; one that fails is dropped and the next call opens a new one.
//! Either way, service resumes by itself when Redis is back.
//!
//! **Where.** `redis://[[USER]:PASSWORD@]HOST:PORT[/DB]`, `rediss://…` for TLS (the system's
//! roots, or [`RedisOptions::ca_pem`]), and `redis-cluster://[[USER]:PASSWORD@]HOST:PORT[,HOST:PORT…]`
//! (or `rediss-cluster://`) for Redis Cluster, naming some of its nodes.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use super::{redact_spec as redact, ApplyFn, AsyncStore, Store, StoreError, StoreFuture};
use crate::entry::{SessionEntry, RESTARTED};
use redis::{ConnectionLike, RedisResult};

/// Settings of a [`RedisStore`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedisOptions {
    /// Sessions not updated for this long expire.
    pub idle_ttl: Duration,
    /// Optimistic attempts per update before giving up with [`StoreError::Contended`].
    pub max_attempts: u32,
    /// Connect, read and write timeout of one command; an awaited operation gives up after
    /// twice this.
    pub timeout: Duration,
    /// Idle connections kept open for reuse by the blocking side.
    pub pool_size: usize,
    /// Sessions whose last written entry this process keeps, to skip the read when no
    /// other writer changed them.
    pub cache_entries: usize,
    /// For `rediss://`: the certificates (PEM) of the authorities that sign the server's
    /// certificate, trusted instead of the system's roots (`None`: the system's roots).
    pub ca_pem: Option<Vec<u8>>,
}

impl Default for RedisOptions {
    /// 24 hours, 64 attempts, 2 s, 64 connections, 10,000 cached entries, the system's
    /// roots.
    fn default() -> Self {
        RedisOptions {
            idle_ttl: Duration::from_secs(24 * 3600),
            max_attempts: 64,
            timeout: Duration::from_secs(2),
            pool_size: 64,
            cache_entries: 10_000,
            ca_pem: None,
        }
    }
}

/// Sessions in Redis: see the module documentation for the key layout and the
/// consistency guarantee.
///
/// ```no_run
/// use loopguard_guard::{Guard, RedisOptions, RedisStore};
/// use std::sync::Arc;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let store = Arc::new(RedisStore::open("redis://127.0.0.1:6379/0", RedisOptions::default())?);
/// let guard = Guard::builder().store(store.clone()).build();
/// guard.apply_line(None, br#"{"type":"call","session":"s1","tool":"read"}"#)?;
/// println!("optimistic retries so far: {}", store.retries());
/// # Ok(())
/// # }
/// ```
pub struct RedisStore {
    target: Target,
    /// The URL without a password, for messages.
    shown: String,
    opts: RedisOptions,
    pool: Mutex<Vec<SyncCon>>,
    /// The multiplexed connection of the awaitable side and, on a single node, the queue
    /// of its compare-and-set batches; opened on first use (in the runtime of the caller,
    /// which then drives them).
    shared: tokio::sync::OnceCell<Shared>,
    retries: AtomicU64,
    /// Key → (version token, the entry written with it), taken out while an update runs;
    /// the least recently written go first when it is full.
    cache: Mutex<Recent>,
    writes: AtomicU64,
    /// What makes this store's version tokens unlike any other writer's: a hash of the
    /// process, the time the store was opened, the stores opened before it in the process,
    /// and 64 random bits.
    origin: [u8; 8],
    cas: redis::Script,
    /// Updates of one key inside this process take turns (striped by key hash), so
    /// optimistic conflicts only arise between processes: one set for blocking callers,
    /// one for awaiting ones (a lock held across an await must be an async lock).
    stripes: Vec<Mutex<()>>,
    async_stripes: Vec<tokio::sync::Mutex<()>>,
}

const STRIPES: usize = 256;

/// What the store connects to.
enum Target {
    Single(redis::Client),
    /// The client, and the scheme and credentials of its URL (`redis://user:pw@`), to reach
    /// each node on its own.
    Cluster(redis::cluster::ClusterClient, String),
}

/// A pooled blocking connection.
enum SyncCon {
    Single(redis::Connection),
    Cluster(Box<redis::cluster::ClusterConnection>),
}

impl SyncCon {
    fn get(&mut self) -> &mut dyn ConnectionLike {
        match self {
            SyncCon::Single(c) => c,
            SyncCon::Cluster(c) => &mut **c,
        }
    }
}

/// The awaitable side's connection: cheap to clone, every clone shares it.
#[derive(Clone)]
enum AsyncCon {
    Single(redis::aio::ConnectionManager),
    Cluster(redis::cluster_async::ClusterConnection),
}

impl redis::aio::ConnectionLike for AsyncCon {
    fn req_packed_command<'a>(
        &'a mut self,
        cmd: &'a redis::Cmd,
    ) -> redis::RedisFuture<'a, redis::Value> {
        match self {
            AsyncCon::Single(c) => c.req_packed_command(cmd),
            AsyncCon::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a redis::Pipeline,
        offset: usize,
        count: usize,
    ) -> redis::RedisFuture<'a, Vec<redis::Value>> {
        match self {
            AsyncCon::Single(c) => c.req_packed_commands(cmd, offset, count),
            AsyncCon::Cluster(c) => c.req_packed_commands(cmd, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            AsyncCon::Single(c) => c.get_db(),
            AsyncCon::Cluster(c) => c.get_db(),
        }
    }
}

/// The awaitable side, once opened.
struct Shared {
    con: AsyncCon,
    /// Single node: the compare-and-sets waiting for the next batch (see [`Batch`]).
    batch: Option<tokio::sync::mpsc::UnboundedSender<Queued>>,
}

/// One compare-and-set waiting for its batch, and where its answer goes.
struct Queued {
    cmd: redis::Cmd,
    answer: Answer,
}

/// Where a queued compare-and-set's answer goes.
type Answer = tokio::sync::oneshot::Sender<RedisResult<redis::Value>>;

/// The most compare-and-sets one batch sends.
const BATCH_MAX: usize = 64;

/// The most batches on their way to Redis at once.
const IN_FLIGHT: usize = 4;

/// Sends the compare-and-sets of concurrent updates together, as pipelines on the
/// multiplexed connection: the updates that are ready to run queue theirs, and what is
/// queued leaves as one pipeline; while [`IN_FLIGHT`] batches are on their way, the updates
/// that arrive queue up and leave together as the next one. Under load, a round trip then
/// carries many updates (one write and one read on each side for all of them, where each
/// would otherwise cost its own); an idle server sends each at once. Each script is still
/// its own atomic compare-and-set in Redis: batching changes how they travel, not what
/// they do, and updates of one session never share a batch (they take turns).
struct Batch {
    con: AsyncCon,
    script: std::sync::Arc<redis::Script>,
    queue: tokio::sync::mpsc::UnboundedReceiver<Queued>,
}

impl Batch {
    async fn run(mut self) {
        let slots = std::sync::Arc::new(tokio::sync::Semaphore::new(IN_FLIGHT));
        while let Some(first) = self.queue.recv().await {
            let mut jobs = Vec::with_capacity(BATCH_MAX);
            jobs.push(first);
            // Let the requests that are ready to run queue theirs before this batch leaves.
            tokio::task::yield_now().await;
            let Ok(slot) = slots.clone().acquire_owned().await else {
                return;
            };
            while jobs.len() < BATCH_MAX {
                match self.queue.try_recv() {
                    Ok(job) => jobs.push(job),
                    Err(_) => break,
                }
            }
            let (con, script) = (self.con.clone(), self.script.clone());
            tokio::spawn(async move {
                send(con, &script, jobs).await;
                drop(slot);
            });
        }
    }
}

/// Sends `jobs` as one pipeline and hands each its answer; a script Redis does not hold
/// (restarted, flushed) is loaded and those jobs sent again.
async fn send(mut con: AsyncCon, script: &redis::Script, jobs: Vec<Queued>) {
    let mut pipe = redis::pipe();
    let mut answers = Vec::with_capacity(jobs.len());
    for j in jobs {
        // A caller that gave up (its deadline passed) needs no answer.
        if !j.answer.is_closed() {
            pipe.add_command(j.cmd);
            answers.push(j.answer);
        }
    }
    for _ in 0..2 {
        if answers.is_empty() {
            return;
        }
        let n = answers.len();
        let replies =
            match redis::aio::ConnectionLike::req_packed_commands(&mut con, &pipe, 0, n).await {
                Ok(r) if r.len() == n => r,
                Ok(r) => {
                    let why = format!("{} replies to {n} scripts", r.len());
                    let e = redis::RedisError::from((
                        redis::ErrorKind::ResponseError,
                        "a pipeline answered the wrong number of replies",
                        why,
                    ));
                    return fail(answers, &e);
                }
                Err(e) => return fail(answers, &e),
            };
        let mut again = redis::pipe();
        let mut waiting = Vec::new();
        for ((reply, answer), cmd) in replies.into_iter().zip(answers).zip(pipe.cmd_iter()) {
            match reply.extract_error() {
                Err(e) if e.kind() == redis::ErrorKind::NoScriptError => {
                    again.add_command(cmd.clone());
                    waiting.push(answer);
                }
                reply => {
                    let _ = answer.send(reply);
                }
            }
        }
        if waiting.is_empty() {
            return;
        }
        if let Err(e) = script.prepare_invoke().load_async(&mut con).await {
            return fail(waiting, &e);
        }
        (pipe, answers) = (again, waiting);
    }
    let e = redis::RedisError::from((
        redis::ErrorKind::NoScriptError,
        "the compare-and-set script was not kept after SCRIPT LOAD",
    ));
    fail(answers, &e);
}

/// Answers every waiting job with `e` (a `RedisError` cannot be cloned: each gets its
/// kind and text).
fn fail(answers: Vec<Answer>, e: &redis::RedisError) {
    for a in answers {
        let _ = a.send(Err(redis::RedisError::from((
            e.kind(),
            "redis",
            e.to_string(),
        ))));
    }
}

/// Compare-and-set: `KEYS[1]`, `ARGV` = expected token (empty: absent), the new value
/// (new token, then the entry), TTL in ms. Answers 1 when written, else the current value
/// (nil when absent). `GETRANGE` of a missing key is empty, so an expected absence matches
/// only an absent key; the value is written by one native `SET … PX` (no hash, no separate
/// expiry), which is what makes format 2 about twice as cheap for Redis as format 1.
const CAS: &str = r"
if redis.call('GETRANGE', KEYS[1], 0, 15) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  return 1
end
return redis.call('GET', KEYS[1])
";

/// The length of a version token, the first bytes of a stored value (the script's
/// `GETRANGE … 0, 15` must agree).
const TOKEN_LEN: usize = 16;

/// A version token as read (at most [`TOKEN_LEN`] bytes: a damaged value may hold fewer;
/// none when the key is absent) or made (always [`TOKEN_LEN`]).
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
struct Token {
    bytes: [u8; TOKEN_LEN],
    len: u8,
}

impl Token {
    fn as_slice(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    /// Splits a stored value into its token and its entry bytes.
    fn split(value: &[u8]) -> (Token, &[u8]) {
        let n = value.len().min(TOKEN_LEN);
        let mut t = Token {
            len: n as u8,
            ..Token::default()
        };
        t.bytes[..n].copy_from_slice(&value[..n]);
        (t, &value[n..])
    }
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_slice()
            .iter()
            .try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("url", &self.shown)
            .field("cluster", &matches!(self.target, Target::Cluster(..)))
            .field("idle_ttl", &self.opts.idle_ttl)
            .field("retries", &self.retries())
            .finish_non_exhaustive()
    }
}

/// Key names of format 2 (see the module documentation).
const PREFIX: &str = "loopguard:2:{";

/// The Redis key of a store key (format 2: a string, the version token then the entry).
///
/// ```
/// assert_eq!(loopguard_guard::redis_key("acme/s1"), "loopguard:2:{acme/s1}");
/// ```
pub fn redis_key(key: &str) -> String {
    format!("{PREFIX}{key}}}")
}

/// One optimistic update in progress: the entry as last read (or cached) and the version
/// token it was read with. The blocking and the awaitable drivers share everything but
/// their I/O through it.
struct Attempt {
    token: Token,
    /// Boxed: it moves between the cache and the update several times per event.
    entry: Box<SessionEntry>,
    lost: u64,
}

/// The compare-and-set one attempt sends: the new value, its token then the entry.
struct Write {
    next: Token,
    value: Vec<u8>,
}

/// What Redis's answer to a compare-and-set means.
enum Settled {
    Written,
    /// Another writer won: start again from what it wrote, after the pause.
    Lost(Box<Attempt>, Duration),
}

impl RedisStore {
    /// A store on `url` (see the module documentation for the forms). Redis need not be up
    /// yet: connections are opened when needed.
    pub fn open(url: &str, opts: RedisOptions) -> Result<RedisStore, StoreError> {
        let shown = redact(url);
        let bad = |e: redis::RedisError| StoreError::Remote(format!("--store {shown}: {e}"));
        let tls = url.starts_with("rediss://") || url.starts_with("rediss-cluster://");
        if tls {
            // rustls needs a process-wide crypto provider; another part of the process may
            // have installed one already, which is as good.
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        if let Some(pem) = &opts.ca_pem {
            if !tls {
                return Err(StoreError::Remote(format!(
                    "--store {shown}: a CA certificate is only used with rediss:// or rediss-cluster://"
                )));
            }
            use rustls::pki_types::pem::PemObject;
            let certs = rustls::pki_types::CertificateDer::pem_slice_iter(pem)
                .filter(Result::is_ok)
                .count();
            if certs == 0 {
                return Err(StoreError::Remote(format!(
                    "--store {shown}: the CA file holds no PEM certificate (-----BEGIN CERTIFICATE-----)"
                )));
            }
        }
        let certs = ca_certificates(&opts);
        let target = match cluster_nodes(url) {
            Some(Err(why)) => return Err(StoreError::Remote(format!("--store {shown}: {why}"))),
            Some(Ok((prefix, nodes))) => {
                let mut b = redis::cluster::ClusterClient::builder(nodes)
                    .connection_timeout(opts.timeout)
                    .response_timeout(opts.timeout)
                    .retries(2);
                if let Some(c) = certs {
                    b = b.certs(c);
                }
                Target::Cluster(b.build().map_err(bad)?, prefix)
            }
            None => Target::Single(client(url, &opts).map_err(bad)?),
        };
        Ok(RedisStore {
            target,
            shown,
            opts,
            pool: Mutex::new(Vec::new()),
            shared: tokio::sync::OnceCell::new(),
            retries: AtomicU64::new(0),
            cache: Mutex::new(Recent::default()),
            writes: AtomicU64::new(0),
            origin: origin(),
            cas: redis::Script::new(CAS),
            stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
            async_stripes: (0..STRIPES).map(|_| tokio::sync::Mutex::new(())).collect(),
        })
    }

    /// Optimistic-concurrency retries so far: updates that found their key changed by
    /// another writer and started again.
    pub fn retries(&self) -> u64 {
        self.retries.load(Ordering::Relaxed)
    }

    fn remote(&self, e: &redis::RedisError) -> StoreError {
        StoreError::Remote(format!("redis {}: {e}", self.shown))
    }

    fn stripe(&self, key: &str) -> usize {
        use std::hash::{BuildHasher, BuildHasherDefault};
        let h = BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default()
            .hash_one(key);
        (h as usize) % STRIPES
    }

    // ---- the blocking side ----

    fn connection(&self) -> Result<SyncCon, StoreError> {
        if let Some(c) = self
            .pool
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop()
        {
            return Ok(c);
        }
        let con = match &self.target {
            Target::Single(client) => {
                let con = client
                    .get_connection_with_timeout(self.opts.timeout)
                    .map_err(|e| self.remote(&e))?;
                con.set_read_timeout(Some(self.opts.timeout))
                    .and_then(|()| con.set_write_timeout(Some(self.opts.timeout)))
                    .map_err(|e| self.remote(&e))?;
                SyncCon::Single(con)
            }
            Target::Cluster(client, _) => SyncCon::Cluster(Box::new(
                client.get_connection().map_err(|e| self.remote(&e))?,
            )),
        };
        Ok(con)
    }

    /// Runs `f` on a pooled connection; a connection that failed is not reused.
    pub(super) fn with<T>(
        &self,
        f: impl FnOnce(&mut dyn ConnectionLike) -> RedisResult<T>,
    ) -> Result<T, StoreError> {
        let mut con = self.connection()?;
        match f(con.get()) {
            Ok(v) => {
                self.give_back(con);
                Ok(v)
            }
            Err(e) => Err(self.remote(&e)),
        }
    }

    fn give_back(&self, mut con: SyncCon) {
        if !con.get().is_open() {
            return;
        }
        let mut pool = self.pool.lock().unwrap_or_else(PoisonError::into_inner);
        if pool.len() < self.opts.pool_size {
            pool.push(con);
        }
    }

    fn update_blocking(
        &self,
        con: &mut dyn ConnectionLike,
        key: &str,
        apply: &mut dyn FnMut(&mut SessionEntry),
    ) -> RedisResult<bool> {
        let rkey = redis_key(key);
        let mut at = match self.cached(key) {
            Some(at) => at,
            None => self.read(key, redis::cmd("GET").arg(&rkey).query(con)?),
        };
        for _ in 0..self.opts.max_attempts {
            let write = self.prepare(&mut at, apply);
            let answer = self.invocation(&rkey, &at, &write).invoke(con)?;
            match self.settle(key, at, write, &answer)? {
                Settled::Written => return Ok(true),
                Settled::Lost(next, pause) => {
                    std::thread::sleep(pause);
                    at = *next;
                }
            }
        }
        Ok(false)
    }

    // ---- the awaitable side ----

    async fn shared(&self) -> RedisResult<&Shared> {
        if let Some(shared) = self.shared.get() {
            return Ok(shared);
        }
        // Opening happens once, and its future (connecting, the handshake) is large:
        // boxed, so that the future of every update does not carry it.
        Box::pin(self.open_shared()).await
    }

    async fn open_shared(&self) -> RedisResult<&Shared> {
        self.shared
            .get_or_try_init(|| async {
                match &self.target {
                    Target::Single(client) => {
                        let config = redis::aio::ConnectionManagerConfig::new()
                            .set_connection_timeout(self.opts.timeout)
                            .set_response_timeout(self.opts.timeout)
                            // Reconnect promptly and give up soon: callers fail open
                            // meanwhile, and the next request tries again.
                            .set_number_of_retries(1)
                            .set_factor(50)
                            .set_max_delay(500);
                        let con = AsyncCon::Single(
                            client.get_connection_manager_with_config(config).await?,
                        );
                        let (batch, queue) = tokio::sync::mpsc::unbounded_channel();
                        tokio::spawn(
                            Batch {
                                con: con.clone(),
                                script: std::sync::Arc::new(self.cas.clone()),
                                queue,
                            }
                            .run(),
                        );
                        Ok(Shared {
                            con,
                            batch: Some(batch),
                        })
                    }
                    Target::Cluster(client, _) => Ok(Shared {
                        con: AsyncCon::Cluster(client.get_async_connection().await?),
                        batch: None,
                    }),
                }
            })
            .await
    }

    async fn async_con(&self) -> RedisResult<AsyncCon> {
        Ok(self.shared().await?.con.clone())
    }

    /// Sends one compare-and-set and awaits its answer: in the next batch on a single node,
    /// on its own in a cluster (where each key's node answers for it).
    async fn cas_awaited(&self, rkey: &str, at: &Attempt, w: &Write) -> RedisResult<redis::Value> {
        let shared = self.shared().await?;
        let Some(batch) = &shared.batch else {
            let mut con = shared.con.clone();
            let invocation = self.invocation(rkey, at, w);
            // Boxed: a cluster's invocation future is large, and updates on a single node
            // should not carry it.
            return Box::pin(invocation.invoke_async(&mut con)).await;
        };
        // Sized for its arguments at once: growing it copied the ~1.9 KB entry several times.
        let mut cmd = redis::Cmd::with_capacity(7, w.value.len() + rkey.len() + 96);
        let (expected, value, ttl_ms) = self.cas_args(at, w);
        cmd.arg("EVALSHA")
            .arg(self.cas.get_hash())
            .arg(1)
            .arg(rkey)
            .arg(expected)
            .arg(value)
            .arg(ttl_ms);
        let (answer, reply) = tokio::sync::oneshot::channel();
        let closed = || {
            redis::RedisError::from((
                redis::ErrorKind::IoError,
                "the connection's batch queue is closed",
            ))
        };
        batch.send(Queued { cmd, answer }).map_err(|_| closed())?;
        reply.await.map_err(|_| closed())?
    }

    /// Runs an awaited operation under the timeout.
    async fn bounded<T>(
        &self,
        op: impl std::future::Future<Output = RedisResult<T>>,
    ) -> Result<T, StoreError> {
        match tokio::time::timeout(self.opts.timeout * 2, op).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(self.remote(&e)),
            Err(_) => Err(StoreError::Remote(format!(
                "redis {}: no answer within {} ms",
                self.shown,
                (self.opts.timeout * 2).as_millis()
            ))),
        }
    }

    async fn update_awaited(&self, key: &str, apply: &mut ApplyFn<'_>) -> RedisResult<bool> {
        let rkey = redis_key(key);
        let mut at = match self.cached(key) {
            Some(at) => at,
            None => {
                let mut con = self.async_con().await?;
                let read = redis::cmd("GET").arg(&rkey).query_async(&mut con).await?;
                self.read(key, read)
            }
        };
        for _ in 0..self.opts.max_attempts {
            let write = self.prepare(&mut at, apply);
            let answer = self.cas_awaited(&rkey, &at, &write).await?;
            match self.settle(key, at, write, &answer)? {
                Settled::Written => return Ok(true),
                Settled::Lost(next, pause) => {
                    tokio::time::sleep(pause).await;
                    at = *next;
                }
            }
        }
        Ok(false)
    }

    // ---- the steps both sides share ----

    /// The attempt that starts from what `GET` answered (`None`: absent).
    fn read(&self, key: &str, value: Option<Vec<u8>>) -> Attempt {
        let (token, entry) = match &value {
            None => (Token::default(), SessionEntry::default()),
            Some(v) => {
                let (token, entry) = Token::split(v);
                (token, self.entry_of(key, Some(entry)))
            }
        };
        Attempt {
            token,
            entry: Box::new(entry),
            lost: 0,
        }
    }

    /// Applies the update to the attempt's entry: the write to send.
    fn prepare(&self, at: &mut Attempt, apply: &mut dyn FnMut(&mut SessionEntry)) -> Write {
        apply(&mut at.entry);
        let next = self.token();
        // The token and the entry in one buffer, encoded in place: no copy to join them.
        let mut value = Vec::with_capacity(2048);
        value.extend_from_slice(next.as_slice());
        at.entry.encode_into(&mut value);
        Write { next, value }
    }

    fn invocation<'s>(
        &'s self,
        rkey: &str,
        at: &Attempt,
        w: &Write,
    ) -> redis::ScriptInvocation<'s> {
        let mut inv = self.cas.key(rkey);
        let (expected, value, ttl_ms) = self.cas_args(at, w);
        inv.arg(expected).arg(value).arg(ttl_ms);
        inv
    }

    /// The compare-and-set's `ARGV`, in the order [`CAS`] reads them: the token the
    /// entry was read at, the new value (its token, then the entry) and the expiry in
    /// milliseconds. One place for both ways of sending it (a batched `EVALSHA` and a
    /// script invocation).
    fn cas_args<'a>(&self, at: &'a Attempt, w: &'a Write) -> (&'a [u8], &'a [u8], u64) {
        (at.token.as_slice(), &w.value, self.ttl_ms())
    }

    /// Reads the compare-and-set's answer.
    fn settle(
        &self,
        key: &str,
        at: Attempt,
        w: Write,
        answer: &redis::Value,
    ) -> RedisResult<Settled> {
        if let redis::Value::Int(1) = answer {
            self.keep(key, w.next, at.entry);
            return Ok(Settled::Written);
        }
        // Another writer won: start again from what it wrote, after a short pause that
        // grows with each lost race (at most ~2 ms, jittered) so contending replicas
        // spread out.
        let total = self.retries.fetch_add(1, Ordering::Relaxed);
        let lost = at.lost + 1;
        let jitter = (total ^ u64::from(std::process::id())).wrapping_mul(0x9E37_79B9) % 200;
        let pause = Duration::from_micros(lost.min(10) * 200 + jitter);
        let mut next = self.read(key, redis::from_redis_value(answer)?);
        next.lost = lost;
        Ok(Settled::Lost(Box::new(next), pause))
    }

    fn ttl_ms(&self) -> u64 {
        u64::try_from(self.opts.idle_ttl.as_millis())
            .unwrap_or(u64::MAX)
            .max(1)
    }

    /// A version token no other write ever had: this store's origin, then a counter of
    /// its writes (big endian).
    fn token(&self) -> Token {
        let n = self.writes.fetch_add(1, Ordering::Relaxed);
        let mut bytes = [0; TOKEN_LEN];
        bytes[..8].copy_from_slice(&self.origin);
        bytes[8..].copy_from_slice(&n.to_be_bytes());
        Token {
            bytes,
            len: TOKEN_LEN as u8,
        }
    }

    /// An entry as stored (`None` = absent), or a fresh one that says why when it is
    /// unreadable (as in the SQLite store: it would otherwise fail every later event).
    fn entry_of(&self, key: &str, bytes: Option<&[u8]>) -> SessionEntry {
        match bytes {
            None => SessionEntry::default(),
            Some(bytes) => SessionEntry::decode(bytes).unwrap_or_else(|e| {
                let mut fresh = SessionEntry::default();
                fresh.meta.insert(
                    RESTARTED.to_string(),
                    format!(
                        "session {key} in redis {}: {e}; starting it afresh",
                        self.shown
                    ),
                );
                fresh
            }),
        }
    }

    /// The entry of a value as `GET` answered it (`None`: absent).
    fn decoded(
        &self,
        key: &str,
        value: Option<Vec<u8>>,
    ) -> Result<Option<SessionEntry>, StoreError> {
        match value {
            None => Ok(None),
            Some(v) => SessionEntry::decode(Token::split(&v).1)
                .map(Some)
                .map_err(|source| StoreError::Corrupt {
                    key: key.to_string(),
                    source,
                }),
        }
    }

    fn cached(&self, key: &str) -> Option<Attempt> {
        self.cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take(key)
            .map(|(token, entry)| Attempt {
                token,
                entry,
                lost: 0,
            })
    }

    fn keep(&self, key: &str, token: Token, entry: Box<SessionEntry>) {
        self.cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .put(key, token, entry, self.opts.cache_entries);
    }

    fn forget_cached(&self, key: &str) {
        self.cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take(key);
    }

    fn contended(&self, key: &str) -> StoreError {
        StoreError::Contended {
            key: key.to_string(),
            attempts: self.opts.max_attempts,
        }
    }

    /// `SCAN`s every session key (on every primary of a cluster), a batch at a time.
    fn scan(&self, mut each: impl FnMut(Vec<String>)) -> Result<(), StoreError> {
        let pattern = format!("{PREFIX}*");
        let mut scan = |c: &mut dyn ConnectionLike| -> RedisResult<()> {
            let mut cursor = 0u64;
            loop {
                let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN")
                    .arg(cursor)
                    .arg("MATCH")
                    .arg(&pattern)
                    .arg("COUNT")
                    .arg(1000)
                    .query(c)?;
                each(batch);
                if next == 0 {
                    return Ok(());
                }
                cursor = next;
            }
        };
        match &self.target {
            Target::Single(_) => self.with(scan),
            Target::Cluster(_, prefix) => {
                for node in self.primaries(prefix)? {
                    let con = node
                        .get_connection_with_timeout(self.opts.timeout)
                        .map_err(|e| self.remote(&e))?;
                    // The connect timeout does not outlive the connect: a node that stops
                    // answering mid-scan must not hold the caller for ever.
                    con.set_read_timeout(Some(self.opts.timeout))
                        .and_then(|()| con.set_write_timeout(Some(self.opts.timeout)))
                        .map_err(|e| self.remote(&e))?;
                    let mut con = con;
                    scan(&mut con).map_err(|e| self.remote(&e))?;
                }
                Ok(())
            }
        }
    }

    /// A client for each primary of the cluster, with the store's credentials and TLS
    /// (`SCAN` answers for one node's keys only).
    fn primaries(&self, prefix: &str) -> Result<Vec<redis::Client>, StoreError> {
        let nodes: String = self.with(|c| redis::cmd("CLUSTER").arg("NODES").query(c))?;
        let mut clients = Vec::new();
        for line in nodes.lines() {
            let Some(addr) = primary_address(line) else {
                continue;
            };
            let url = format!("{prefix}{addr}");
            clients.push(client(&url, &self.opts).map_err(|e| self.remote(&e))?);
        }
        Ok(clients)
    }
}

/// The entries this process wrote last, with their version tokens: a bounded cache that
/// drops the least recently written eighth when it is full (sessions written often stay,
/// so sticky load balancing keeps its one round trip per update).
#[derive(Default)]
struct Recent {
    entries: HashMap<String, (Token, Box<SessionEntry>, u64)>,
    clock: u64,
}

impl Recent {
    /// Takes a session's entry out (an update in progress owns it).
    fn take(&mut self, key: &str) -> Option<(Token, Box<SessionEntry>)> {
        self.entries.remove(key).map(|(t, e, _)| (t, e))
    }

    /// Keeps what was just written, within `capacity` entries.
    fn put(&mut self, key: &str, token: Token, entry: Box<SessionEntry>, capacity: usize) {
        if capacity == 0 {
            return;
        }
        if self.entries.len() >= capacity && !self.entries.contains_key(key) {
            // Evicting an eighth at once keeps the cost per write constant on average.
            let mut ages: Vec<u64> = self.entries.values().map(|(_, _, at)| *at).collect();
            let drop = (ages.len() / 8).max(1).min(ages.len());
            let (_, &mut cut, _) = ages.select_nth_unstable(drop - 1);
            self.entries.retain(|_, (_, _, at)| *at > cut);
        }
        self.clock += 1;
        self.entries
            .insert(key.to_string(), (token, entry, self.clock));
    }
}

/// A [`RedisStore`]'s origin: a 64-bit hash of its process, when it was opened, how many
/// stores the process opened before it, and 64 random bits. The random part keeps two replicas apart
/// that share a pid and a clock tick (containers all run as pid 1): equal tokens would let
/// one replica's compare-and-set overwrite the other's write.
fn origin() -> [u8; 8] {
    use std::hash::{BuildHasher, Hasher};
    static OPENED: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let nth = OPENED.fetch_add(1, Ordering::Relaxed);
    // `RandomState` is seeded from the operating system's randomness once per process and
    // varied per instance: enough for a nonce, with no new dependency.
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(nth);
    h.write_u128(nanos);
    h.write_u32(std::process::id());
    // Everything that tells this store apart, mixed into the 64 bits a token carries.
    h.finish().to_be_bytes()
}

/// `--redis-ca`'s certificates, as redis wants them.
fn ca_certificates(opts: &RedisOptions) -> Option<redis::TlsCertificates> {
    opts.ca_pem.clone().map(|pem| redis::TlsCertificates {
        client_tls: None,
        root_cert: Some(pem),
    })
}

/// A client for one server URL, trusting `--redis-ca` over `rediss://` (`open` checked that
/// a CA only comes with TLS).
fn client(url: &str, opts: &RedisOptions) -> redis::RedisResult<redis::Client> {
    match ca_certificates(opts) {
        Some(certs) if url.starts_with("rediss://") => redis::Client::build_with_tls(url, certs),
        _ => redis::Client::open(url),
    }
}

/// The `HOST:PORT` of a reachable primary in a `CLUSTER NODES` line (`ID IP:PORT@BUSPORT
/// [,HOSTNAME] FLAGS …`): its announced hostname when there is one (TLS certificates name
/// it), an IPv6 address in brackets; `None` for replicas, failed primaries and nodes
/// without an address (`noaddr`, a handshake in progress).
fn primary_address(line: &str) -> Option<String> {
    let mut fields = line.split(' ');
    let (_, addr, flags) = (fields.next()?, fields.next()?, fields.next()?);
    let flags: Vec<&str> = flags.split(',').collect();
    // `fail?` (only suspected) is still a primary holding its keys.
    if !flags.contains(&"master")
        || flags
            .iter()
            .any(|f| matches!(*f, "fail" | "noaddr" | "handshake"))
    {
        return None;
    }
    let (endpoint, hostname) = match addr.split_once(',') {
        Some((e, h)) => (e, Some(h).filter(|h| !h.is_empty())),
        None => (addr, None),
    };
    let endpoint = endpoint.split('@').next()?;
    let (ip, port) = endpoint.rsplit_once(':')?;
    if port.is_empty() || port == "0" {
        return None;
    }
    let host = match hostname {
        Some(h) => h.to_string(),
        None if ip.is_empty() => return None,
        None if ip.contains(':') => format!("[{ip}]"),
        None => ip.to_string(),
    };
    Some(format!("{host}:{port}"))
}

/// The scheme and credentials (`redis://user:pw@`) and the seed nodes, as URLs, of a
/// `redis-cluster://` or `rediss-cluster://` URL.
fn cluster_nodes(url: &str) -> Option<Result<(String, Vec<String>), String>> {
    let (scheme, rest) = if let Some(r) = url.strip_prefix("redis-cluster://") {
        ("redis://", r)
    } else {
        ("rediss://", url.strip_prefix("rediss-cluster://")?)
    };
    let (auth, hosts) = match rest.rsplit_once('@') {
        Some((a, h)) => (format!("{a}@"), h),
        None => (String::new(), rest),
    };
    // A cluster has one database: `/` or `/0` may end the list, nothing else.
    let hosts = match hosts.split_once('/') {
        None => hosts,
        Some((h, "" | "0")) => h,
        Some((_, db)) => {
            return Some(Err(format!(
                "a Redis Cluster has only database 0; remove `/{db}`"
            )))
        }
    };
    let prefix = format!("{scheme}{auth}");
    let nodes: Vec<String> = hosts
        .split(',')
        .filter(|h| !h.is_empty())
        .map(|h| format!("{prefix}{h}"))
        .collect();
    if nodes.is_empty() {
        return Some(Err(
            "name at least one node: redis-cluster://HOST:PORT[,HOST:PORT…]".to_string(),
        ));
    }
    Some(Ok((prefix, nodes)))
}

impl Store for RedisStore {
    fn update(
        &self,
        key: &str,
        apply: &mut dyn FnMut(&mut SessionEntry),
    ) -> Result<(), StoreError> {
        let _turn = self.stripes[self.stripe(key)]
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let mut con = self.connection()?;
        match self.update_blocking(con.get(), key, apply) {
            Ok(written) => {
                self.give_back(con);
                if written {
                    Ok(())
                } else {
                    Err(self.contended(key))
                }
            }
            Err(e) => Err(self.remote(&e)),
        }
    }

    fn load(&self, key: &str) -> Result<Option<SessionEntry>, StoreError> {
        let bytes: Option<Vec<u8>> =
            self.with(|c| redis::cmd("GET").arg(redis_key(key)).query(c))?;
        self.decoded(key, bytes)
    }

    fn delete(&self, key: &str) -> Result<bool, StoreError> {
        self.forget_cached(key);
        let n: u64 = self.with(|c| redis::cmd("DEL").arg(redis_key(key)).query(c))?;
        Ok(n > 0)
    }

    fn keys(&self) -> Result<Vec<String>, StoreError> {
        let mut keys = Vec::new();
        self.scan(|batch| {
            keys.extend(batch.into_iter().filter_map(|k| {
                k.strip_prefix(PREFIX)
                    .and_then(|k| k.strip_suffix('}'))
                    .map(str::to_string)
            }));
        })?;
        Ok(keys)
    }

    fn count(&self) -> Result<u64, StoreError> {
        let mut n = 0u64;
        self.scan(|batch| n += batch.len() as u64)?;
        Ok(n)
    }

    fn ping(&self) -> Result<(), StoreError> {
        self.with(|c| redis::cmd("PING").query::<String>(c).map(|_| ()))
    }

    fn as_async(&self) -> Option<&dyn AsyncStore> {
        Some(self)
    }

    /// The loop history beside the sessions (see `redis_loops`).
    fn record_loop(&self, step: &crate::LoopStep) -> Result<crate::LoopChange, StoreError> {
        self.record_loop_in_redis(step)
    }

    fn loops(&self, query: &crate::LoopQuery) -> Result<crate::LoopPage, StoreError> {
        self.loops_in_redis(query)
    }

    fn prune_loops(&self, before_ms: u64) -> Result<u64, StoreError> {
        self.prune_loops_in_redis(before_ms)
    }
}

impl AsyncStore for RedisStore {
    fn update<'a>(&'a self, key: &'a str, apply: &'a mut ApplyFn<'_>) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            // Waiting for the session's turn counts against the same deadline.
            let turn_and_update = async {
                let _turn = self.async_stripes[self.stripe(key)].lock().await;
                self.update_awaited(key, apply).await
            };
            if self.bounded(turn_and_update).await? {
                Ok(())
            } else {
                Err(self.contended(key))
            }
        })
    }

    fn load<'a>(&'a self, key: &'a str) -> StoreFuture<'a, Option<SessionEntry>> {
        Box::pin(async move {
            let bytes = self
                .bounded(async {
                    let mut con = self.async_con().await?;
                    redis::cmd("GET")
                        .arg(redis_key(key))
                        .query_async(&mut con)
                        .await
                })
                .await?;
            self.decoded(key, bytes)
        })
    }

    fn delete<'a>(&'a self, key: &'a str) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            self.forget_cached(key);
            let n: u64 = self
                .bounded(async {
                    let mut con = self.async_con().await?;
                    redis::cmd("DEL")
                        .arg(redis_key(key))
                        .query_async(&mut con)
                        .await
                })
                .await?;
            Ok(n > 0)
        })
    }

    fn ping(&self) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            self.bounded(async {
                let mut con = self.async_con().await?;
                redis::cmd("PING")
                    .query_async::<String>(&mut con)
                    .await
                    .map(|_| ())
            })
            .await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cache stays within its bound and drops the sessions written longest ago: a
    /// session written again and again survives any number of one-off sessions.
    #[test]
    fn the_entry_cache_drops_the_least_recently_written() {
        let mut recent = Recent::default();
        let entry = Box::<SessionEntry>::default;
        let t = |b: u8| Token::split(&[b]).0;
        for n in 0..1_000 {
            recent.put("hot", t(1), entry(), 64);
            recent.put(&format!("cold-{n}"), t(2), entry(), 64);
            assert!(recent.entries.len() <= 64);
        }
        assert_eq!(recent.take("hot").map(|(t, _)| t), Some(t(1)));
        assert!(
            recent.take("hot").is_none(),
            "taken out while an update runs"
        );
        assert!(recent.take("cold-999").is_some());
        assert!(recent.take("cold-0").is_none());
        recent.put("x", t(3), entry(), 0);
        assert!(recent.take("x").is_none(), "a capacity of 0 keeps nothing");
    }

    /// Version tokens never repeat, within a store or between two stores of one process,
    /// and have the length the script's `GETRANGE` reads.
    #[test]
    fn version_tokens_are_unique() {
        let open = || RedisStore::open("redis://127.0.0.1:1/0", RedisOptions::default()).unwrap();
        let (a, b) = (open(), open());
        assert_ne!(a.origin, b.origin);
        let mut seen = std::collections::HashSet::new();
        for _ in 0..300 {
            for t in [a.token(), b.token()] {
                assert_eq!(t.as_slice().len(), TOKEN_LEN);
                assert!(seen.insert(t));
            }
        }
        let s = open();
        s.writes.store(0xab, Ordering::Relaxed);
        assert_eq!(s.token().as_slice()[8..], 0xabu64.to_be_bytes());
        assert!(CAS.contains(&format!("GETRANGE', KEYS[1], 0, {}", TOKEN_LEN - 1)));
    }

    /// A stored value splits into its token and its entry; a value shorter than a token
    /// (damaged) is all token and an empty, unreadable entry.
    #[test]
    fn values_split_into_token_and_entry() {
        let mut value = vec![7u8; TOKEN_LEN];
        value.extend_from_slice(b"LGE2rest");
        let (t, e) = Token::split(&value);
        assert_eq!((t.as_slice(), e), (&[7u8; TOKEN_LEN][..], &b"LGE2rest"[..]));
        let (t, e) = Token::split(b"abc");
        assert_eq!((t.as_slice(), e), (&b"abc"[..], &b""[..]));
        assert!(SessionEntry::decode(e).is_err());
    }

    #[test]
    fn passwords_are_not_shown() {
        assert_eq!(redact("redis://:s3cret@h:6379/0"), "redis://:***@h:6379/0");
        assert_eq!(redact("redis://u:s3cret@h"), "redis://u:***@h");
        assert_eq!(redact("redis://h:6379"), "redis://h:6379");
        assert_eq!(
            redact("redis-cluster://:pw@a:1,b:2"),
            "redis-cluster://:***@a:1,b:2"
        );
    }

    #[test]
    fn cluster_urls_name_their_seed_nodes() {
        assert_eq!(
            cluster_nodes("redis-cluster://:pw@10.0.0.1:7000,10.0.0.2:7001/"),
            Some(Ok((
                "redis://:pw@".to_string(),
                vec![
                    "redis://:pw@10.0.0.1:7000".to_string(),
                    "redis://:pw@10.0.0.2:7001".to_string()
                ]
            )))
        );
        assert_eq!(
            cluster_nodes("rediss-cluster://h:7000/0").map(|r| r.map(|(_, n)| n)),
            Some(Ok(vec!["rediss://h:7000".to_string()]))
        );
        assert_eq!(cluster_nodes("redis://h:7000"), None);
        // Bad cluster URLs are errors that say what to change, not a failure at connect.
        for (url, says) in [
            ("redis-cluster://h:7000/3", "only database 0; remove `/3`"),
            ("redis-cluster://", "name at least one node"),
            ("redis-cluster://:pw@/", "name at least one node"),
        ] {
            let e = RedisStore::open(url, RedisOptions::default()).unwrap_err();
            assert!(e.to_string().contains(says), "{url}: {e}");
        }
    }

    #[test]
    fn an_unreachable_redis_is_a_remote_error_not_a_hang() {
        // Port 1 on loopback: nothing listens there.
        let store = RedisStore::open(
            "redis://127.0.0.1:1/0",
            RedisOptions {
                timeout: Duration::from_millis(500),
                ..RedisOptions::default()
            },
        )
        .unwrap();
        let start = std::time::Instant::now();
        assert!(matches!(Store::ping(&store), Err(StoreError::Remote(_))));
        assert!(matches!(
            Store::update(&store, "-/s", &mut |_| {}),
            Err(StoreError::Remote(_))
        ));
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let awaited = rt.block_on(async {
            let a = store.as_async().unwrap();
            (a.ping().await, a.update("-/s", &mut |_| {}).await)
        });
        assert!(
            matches!(awaited.0, Err(StoreError::Remote(_))),
            "{awaited:?}"
        );
        assert!(
            matches!(awaited.1, Err(StoreError::Remote(_))),
            "{awaited:?}"
        );
        assert!(start.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn cluster_nodes_lines_name_reachable_primaries() {
        let line =
            |addr: &str, flags: &str| format!("07c3 {addr} {flags} - 0 1 1 connected 0-5460");
        assert_eq!(
            primary_address(&line("127.0.0.1:7000@17000", "myself,master")),
            Some("127.0.0.1:7000".to_string())
        );
        assert_eq!(
            primary_address(&line("10.0.0.5:7001@17001,redis-1.example", "master")),
            Some("redis-1.example:7001".to_string())
        );
        assert_eq!(
            primary_address(&line("2001:db8::1:7002@17002", "master,fail?")),
            Some("[2001:db8::1]:7002".to_string())
        );
        assert_eq!(primary_address(&line("10.0.0.6:7003@17003", "slave")), None);
        assert_eq!(
            primary_address(&line("10.0.0.7:7004@17004", "master,fail")),
            None
        );
        assert_eq!(primary_address(&line(":0@0", "master,noaddr")), None);
        assert_eq!(
            primary_address(&line(":7005@17005", "master,handshake")),
            None
        );
        assert_eq!(primary_address(""), None);
    }

    #[test]
    fn a_ca_file_without_a_certificate_is_refused() {
        let e = RedisStore::open(
            "rediss://127.0.0.1:1/0",
            RedisOptions {
                ca_pem: Some(
                    b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n".to_vec(),
                ),
                ..RedisOptions::default()
            },
        )
        .unwrap_err();
        assert!(e.to_string().contains("no PEM certificate"), "{e}");
        let e = RedisStore::open(
            "redis-cluster://127.0.0.1:1",
            RedisOptions {
                ca_pem: Some(b"x".to_vec()),
                ..RedisOptions::default()
            },
        )
        .unwrap_err();
        assert!(e.to_string().contains("only used with rediss://"), "{e}");
    }

    #[test]
    fn a_ca_certificate_needs_rediss() {
        let e = RedisStore::open(
            "redis://127.0.0.1:1/0",
            RedisOptions {
                ca_pem: Some(b"-----BEGIN CERTIFICATE-----".to_vec()),
                ..RedisOptions::default()
            },
        )
        .unwrap_err();
        assert!(e.to_string().contains("only used with rediss://"), "{e}");
    }
}
