# memform as a container image: the CLI and the bundled datasets, run as a
# non-root user. Two stages: the build (Rust toolchain, ~2 GB) and a slim
# runtime holding only the binary, its CA certificates and datasets/.
#
#   docker build -t memform:latest .
#   docker run --rm memform:latest run --dataset datasets/scenarios --mode rules --embedder minilm
#
# The Kubernetes sweep recipe in README.md names this image (memform:latest).

FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
# One job per core the builder has; --locked: exactly Cargo.lock's versions.
RUN cargo build --release --locked --bin memform \
    && install -m 0755 target/release/memform /usr/local/bin/memform

FROM debian:bookworm-slim
# ca-certificates: HTTPS to an LLM or embedding endpoint (--llm live). Not
# pinned (DL3008): it must follow the distribution's security updates.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --create-home --home-dir /home/memform memform
COPY --from=build /usr/local/bin/memform /usr/local/bin/memform
# The datasets beside the working directory the runs write into (reports/).
COPY --chown=memform:memform datasets /home/memform/datasets
USER 10001:10001
WORKDIR /home/memform
ENTRYPOINT ["memform"]
CMD ["--help"]
