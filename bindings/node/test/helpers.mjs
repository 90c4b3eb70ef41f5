// Shared by the tests: where the repository's fixtures are (scripts/test-node.sh says), the
// parity cases, and a `loopguard serve` started on a free loopback port.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

function required(name, what) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run the tests with scripts/test-node.sh (${what})`);
  return v;
}

/** The repository root (scripts/test-node.sh sets LOOPGUARD_REPO). */
export const REPO = required('LOOPGUARD_REPO', 'the repository root');
export const PARITY = path.join(REPO, 'tests', 'fixtures', 'parity');

export function readJsonl(file) {
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '');
}

/** Every parity case name. */
export function parityCases() {
  return fs
    .readdirSync(PARITY)
    .filter((f) => f.endsWith('.events.jsonl'))
    .map((f) => f.slice(0, -'.events.jsonl'.length))
    .sort();
}

export async function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

/** Starts `loopguard serve` (LOOPGUARD_SERVE_BIN) with `args`; resolves to { url, stop }. */
export async function startServe(args = []) {
  const bin = required('LOOPGUARD_SERVE_BIN', 'the loopguard binary, built by cargo build -p loopguard');
  const port = await freePort();
  const proc = spawn(bin, ['serve', '--listen', `127.0.0.1:${port}`, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  proc.stderr.on('data', (d) => (stderr += d));
  const deadline = Date.now() + 30_000;
  for (;;) {
    const up = await new Promise((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => {
        s.end();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
    if (up) break;
    if (proc.exitCode !== null) throw new Error(`loopguard serve exited: ${stderr}`);
    if (Date.now() > deadline) {
      proc.kill();
      throw new Error(`loopguard serve did not listen within 30 s: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url: `http://127.0.0.1:${port}`,
    stop: () =>
      new Promise((resolve) => {
        if (proc.exitCode !== null) return resolve();
        proc.once('exit', resolve);
        proc.kill('SIGTERM');
      }),
  };
}

/** A logger that keeps what it is told. */
export function recordingLogger() {
  const lines = [];
  return { lines, warn: (m) => lines.push(String(m)) };
}

/** Where scripts/setup-node-agents.sh installed the real agent programs (test-node.sh sets it). */
export function agentsDir() {
  return required('LOOPGUARD_NODE_AGENTS', 'the agent programs (run scripts/setup-node-agents.sh, which scripts/test-node.sh calls)');
}

/**
 * Runs a program to its end (or kills it after `timeoutMs`, generous: the machine is loaded);
 * resolves with { code, signal, stdout, stderr }.
 */
export function runProgram(cmd, args, { cwd, env, timeoutMs = 180_000 } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(new Error(`cannot start ${cmd}: ${e.message}`));
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}
