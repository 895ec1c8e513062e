# syntax=docker/dockerfile:1
#
# redcell as a container: a static binary (no libc, no shell) on distroless,
# running as a non-root user, its Pebble store on a volume at /data.
#
#   docker build --build-arg COMMIT=$(git rev-parse --short HEAD) -t redcell .
#   docker run -p 127.0.0.1:6379:6379 -v redcell-data:/data redcell
#
# Settings are REDCELL_* variables (every flag has one), so that the
# health check, which runs `redcell --healthcheck` beside the server, reads
# the same port and password as the server. Flags after the image name work
# too, and win over the variables.

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG COMMIT=unknown
RUN CGO_ENABLED=0 GOOS=linux go build -buildvcs=false -ldflags "-s -w -X main.commit=${COMMIT}" -o /out/redcell . \
    && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/redcell /usr/local/bin/redcell
# The same binary where Envoy Gateway's rate limit Deployment runs
# envoyproxy/ratelimit: run as ratelimit, it reads that service's
# environment (--rls-env), so that swapping the image is enough.
COPY --from=build /out/redcell /bin/ratelimit
# The volume's mount point, owned by the user that runs the server, so a new
# named volume starts out writable.
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
# As Redis's official image: listen on every address of the container, with
# protected mode off, since the container's network decides who can reach it
# (publish the port only where needed). Where untrusted clients can reach
# it, set a password: REDCELL_REQUIREPASS, or REDCELL_REQUIREPASS_FILE
# pointing at a Docker secret.
ENV REDCELL_BIND=0.0.0.0 \
    REDCELL_PROTECTED_MODE=no \
    REDCELL_PORT=6379 \
    REDCELL_DIR=/data \
    REDCELL_METRICS_ADDR=:9379 \
    REDCELL_LOG_FORMAT=json
VOLUME ["/data"]
EXPOSE 6379 9379
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 CMD ["/usr/local/bin/redcell", "--healthcheck"]
# SIGTERM saves every change before exiting: give it time (docker stop -t,
# stop_grace_period in compose).
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/redcell"]
