# outboxd container image: the dispatcher node (`outboxd`, the default entrypoint) and the
# example worker (`outboxd-worker`, use it as the entrypoint to run a worker).
#
#   docker build -t outboxd:local .
#   docker run --rm -p 8080:8080 -e OUTBOXD_DATABASE_URL=postgresql://… outboxd:local
#   docker run --rm --entrypoint outboxd-worker -e OUTBOXD_WORKER_URL=ws://…/v1/workers outboxd:local
#
# Every package below is a Debian 12 (bookworm) package. Boost comes only from
# libboost1.81-dev: the unversioned Boost packages are 1.74, which does not compile this
# code with g++ 12 in C++20 (scripts/check-deploy rejects them here).

############################################################################ build stage
FROM debian:bookworm-slim AS build

ARG DEBIAN_FRONTEND=noninteractive
# Beast/Asio translation units are slow and memory-hungry at -O2; raise on a large builder.
ARG BUILD_JOBS=2

# scripts/install-deps minus the test/demo-only packages (catch2, postgresql,
# python3-websockets, prometheus, ccache, git). prometheus-cpp-dev pulls in the
# civetweb/curl/zlib development packages its CMake config asks for.
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build pkg-config ca-certificates \
      libpqxx-dev libboost1.81-dev nlohmann-json3-dev prometheus-cpp-dev \
      libspdlog-dev libcli11-dev libssl-dev libhowardhinnant-date-dev \
      libcjose-dev libjansson-dev libnats-dev librabbitmq-dev \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /src
COPY . .

# Release, no tests; warnings stay warnings here (-O2 diagnostics differ from the Debug CI
# build, and the image must not fail on a new compiler note).
RUN cmake -S /src -B /build -G Ninja \
      -DCMAKE_BUILD_TYPE=Release \
      -DOUTBOXD_BUILD_TESTS=OFF \
      -DOUTBOXD_WERROR=OFF \
 && cmake --build /build -j "${BUILD_JOBS}" --target outboxd outboxd-worker outboxd-receiver \
 && strip --strip-unneeded /build/bin/outboxd /build/bin/outboxd-worker

########################################################################## runtime stage
FROM debian:bookworm-slim AS runtime

ARG DEBIAN_FRONTEND=noninteractive

# Runtime shared libraries only (from `ldd build/bin/outboxd`): libpqxx-6.4 (+ libpq5),
# libspdlog1.10 (+ libfmt9), libprometheus-cpp-core1.0, libssl3 (HTTPS and wss://),
# libstdc++6, libdate-tz3 with tzdata (schedules' time zones), libcjose0 (+ libjansson4:
# bearer JWTs), libnats3.4 and librabbitmq4 (broker targets: NATS JetStream, RabbitMQ). Boost,
# nlohmann-json and CLI11 are header-only. curl is for the HEALTHCHECK; ca-certificates for TLS to
# PostgreSQL (sslmode=verify-full).
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      libpqxx-6.4 libpq5 libspdlog1.10 libfmt9 libprometheus-cpp-core1.0 libssl3 libstdc++6 \
      libdate-tz3 tzdata libcjose0 libjansson4 libnats3.4 librabbitmq4 ca-certificates curl \
 && rm -rf /var/lib/apt/lists/*

RUN groupadd --system outboxd \
 && useradd --system --gid outboxd --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin outboxd

COPY --from=build /build/bin/outboxd /build/bin/outboxd-worker /build/bin/outboxd-receiver /usr/local/bin/

# Fail the image build, not the first container start, if a shared library is missing.
RUN ! ldd /usr/local/bin/outboxd /usr/local/bin/outboxd-worker | grep -F 'not found' \
 && outboxd --help >/dev/null \
 && outboxd-worker --help >/dev/null

USER outboxd
WORKDIR /tmp
EXPOSE 8080

# Ready = registered in the cluster with a working database (503 otherwise). The probe
# assumes the default OUTBOXD_LISTEN port 8080; worker containers should disable it.
HEALTHCHECK --interval=5s --timeout=3s --start-period=30s --retries=3 \
  CMD curl -fsS -o /dev/null http://127.0.0.1:8080/readyz || exit 1

ENTRYPOINT ["outboxd"]
CMD ["serve"]
