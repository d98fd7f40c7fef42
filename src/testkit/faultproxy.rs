//! A TCP proxy for fault tests: the tool connects through it to a throwaway server, and the
//! test cuts every connection passing through at the instant it chooses, resetting both
//! sockets (as a failing network path or a firewall does) while the tool itself lives on.
//!
//! It runs on a thread of its own with its own runtime, so the test's runtime (two workers,
//! busy with a writer) never delays a forwarded byte or a cut.

use crate::db::connect::ConnectionConfig;
use anyhow::{Context, Result};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{broadcast, oneshot};

/// A running proxy on a loopback port, forwarding to one server.
pub struct FaultProxy {
    port: u16,
    cut: broadcast::Sender<()>,
    live: Arc<AtomicUsize>,
    accepted: Arc<AtomicU64>,
    down: Arc<AtomicBool>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FaultProxy {
    /// Starts forwarding a fresh loopback port to `upstream` (the server's host and port).
    pub fn start(upstream: &ConnectionConfig) -> Result<Self> {
        let target = format!("{}:{}", upstream.host, upstream.port);
        let listener = std::net::TcpListener::bind("127.0.0.1:0")
            .context("cannot bind a loopback port for the fault proxy")?;
        listener.set_nonblocking(true)?;
        let port = listener.local_addr()?.port();
        let (cut, _) = broadcast::channel(16);
        let (stop, stopped) = oneshot::channel();
        let live = Arc::new(AtomicUsize::new(0));
        let accepted = Arc::new(AtomicU64::new(0));
        let down = Arc::new(AtomicBool::new(false));
        let (cuts, count, total) = (cut.clone(), live.clone(), accepted.clone());
        let refuse = down.clone();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot build the fault proxy's runtime")?;
        let thread = std::thread::Builder::new()
            .name("fault-proxy".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let Ok(listener) = TcpListener::from_std(listener) else {
                        return;
                    };
                    tokio::select! {
                        _ = accept_loop(listener, target, cuts, count, total, refuse) => {}
                        _ = stopped => {}
                    }
                })
            })
            .context("cannot start the fault proxy's thread")?;
        Ok(FaultProxy {
            port,
            cut,
            live,
            accepted,
            down,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The loopback port the proxy listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `cfg` pointed at the proxy instead of the server (TCP, never the server's socket).
    pub fn route(&self, cfg: &ConnectionConfig) -> ConnectionConfig {
        let mut through = cfg.clone();
        through.host = "127.0.0.1".into();
        through.port = self.port;
        through.socket = None;
        through
    }

    /// Resets both sockets of every connection passing through now; returns how many there were.
    /// Connections made afterwards pass as before.
    pub fn cut(&self) -> usize {
        let n = self.live.load(Ordering::SeqCst);
        let _ = self.cut.send(());
        n
    }

    /// While `down`, every new connection is reset at once, as a server that is not there
    /// (with [`FaultProxy::cut`], the server gone for as long as the test says).
    pub fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
    }

    /// Connections passing through now.
    pub fn live(&self) -> usize {
        self.live.load(Ordering::SeqCst)
    }

    /// Connections accepted since the proxy started.
    pub fn accepted(&self) -> u64 {
        self.accepted.load(Ordering::SeqCst)
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn accept_loop(
    listener: TcpListener,
    target: String,
    cuts: broadcast::Sender<()>,
    live: Arc<AtomicUsize>,
    accepted: Arc<AtomicU64>,
    down: Arc<AtomicBool>,
) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            continue;
        };
        if down.load(Ordering::SeqCst) {
            reset(&client);
            continue;
        }
        accepted.fetch_add(1, Ordering::SeqCst);
        let (target, cut, live) = (target.clone(), cuts.subscribe(), live.clone());
        tokio::spawn(async move {
            live.fetch_add(1, Ordering::SeqCst);
            forward(client, &target, cut).await;
            live.fetch_sub(1, Ordering::SeqCst);
        });
    }
}

/// Forwards one connection until either side closes it or a cut resets both.
async fn forward(mut client: TcpStream, target: &str, mut cut: broadcast::Receiver<()>) {
    let Ok(mut server) = TcpStream::connect(target).await else {
        reset(&client);
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let was_cut = tokio::select! {
        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => false,
        // A lagged receiver missed a cut: still a cut. Closed: the proxy is going away.
        _ = cut.recv() => true,
    };
    if was_cut {
        reset(&client);
        reset(&server);
    }
}

/// Makes the coming close of `s` a reset (RST), not an orderly FIN: a cut, not a goodbye.
fn reset(s: &TcpStream) {
    let _ = s.set_zero_linger();
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// An echo server on a loopback port, standing for the database server.
    fn echo() -> u16 {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for s in l.incoming().flatten() {
                std::thread::spawn(move || {
                    let mut s = s;
                    let mut r = s.try_clone().unwrap();
                    let _ = std::io::copy(&mut r, &mut s);
                });
            }
        });
        port
    }

    #[tokio::test]
    async fn a_cut_resets_live_connections_and_later_ones_pass() {
        let upstream =
            ConnectionConfig::from_url(&format!("mysql://u@127.0.0.1:{}/", echo())).unwrap();
        let proxy = FaultProxy::start(&upstream).unwrap();
        let addr = format!("127.0.0.1:{}", proxy.port());
        let mut a = TcpStream::connect(&addr).await.unwrap();
        a.write_all(b"ping").await.unwrap();
        let mut buf = [0u8; 4];
        a.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"ping");
        assert_eq!(proxy.live(), 1);
        assert_eq!(proxy.cut(), 1);
        // The client sees its connection reset (or closed), never another byte.
        let mut rest = Vec::new();
        let read =
            tokio::time::timeout(std::time::Duration::from_secs(5), a.read_to_end(&mut rest))
                .await
                .expect("the cut ends the connection at once");
        assert!(
            matches!(&read, Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset),
            "{read:?}"
        );
        let mut b = TcpStream::connect(&addr).await.unwrap();
        b.write_all(b"pong").await.unwrap();
        b.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"pong");
        assert_eq!(proxy.accepted(), 2);
        assert!(proxy.route(&upstream).port == proxy.port());
    }
}
