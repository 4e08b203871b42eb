# jobdrop in a container: docs/operations.md says how to run it.
#
#   docker build -t jobdrop .
#   docker run -p 8080:8080 -v jobdrop-data:/var/lib/jobdrop -v "$PWD/inbox:/srv/jobdrop/inbox" \
#     -e JOBDROP_NODE=jobdrop-1 -e JOBDROP_CONSOLE_USERS_0_NAME=admin \
#     -e JOBDROP_CONSOLE_USERS_0_PASSWORD_HASH='...' -e JOBDROP_CONSOLE_USERS_0_ROLE=admin jobdrop

# The builder's Go must be at least go.mod's go line (the image does not
# download a newer toolchain), and both stages must share the Debian
# release: the binary links the builder's C library (go-sqlite3 is cgo).
ARG GO_VERSION=1.26.8
ARG DEBIAN_RELEASE=bookworm

FROM golang:${GO_VERSION}-${DEBIAN_RELEASE} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The golang image brings gcc and libc6-dev for cgo.
RUN CGO_ENABLED=1 go build -trimpath -ldflags='-s -w' -o /out/jobdrop ./cmd/jobdrop

FROM debian:${DEBIAN_RELEASE}-slim
# ca-certificates: the system's roots for kafka.tls without kafka.tls.ca_file.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/*
RUN groupadd --system --gid 10001 jobdrop \
 && useradd --system --uid 10001 --gid jobdrop --home-dir /var/lib/jobdrop --no-create-home --shell /usr/sbin/nologin jobdrop \
 && install -d -o jobdrop -g jobdrop /var/lib/jobdrop /srv/jobdrop/inbox
COPY --from=build /out/jobdrop /usr/local/bin/jobdrop
COPY deploy/container.yaml /etc/jobdrop/jobdrop.yaml

USER 10001:10001
WORKDIR /var/lib/jobdrop
# The console (console.listen) and the embedded broker (kafka.embedded.listen).
EXPOSE 8080 9092
VOLUME ["/var/lib/jobdrop", "/srv/jobdrop/inbox"]

# /healthz through bash's /dev/tcp, as the image has no HTTP client. The
# port is JOBDROP_CONSOLE_LISTEN's when set, else the image's 8080.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["bash", "-c", "l=${JOBDROP_CONSOLE_LISTEN:-0.0.0.0:8080}; exec 3<>/dev/tcp/127.0.0.1/${l##*:} && printf 'GET /healthz HTTP/1.0\\r\\n\\r\\n' >&3 && read -r s <&3 && [[ $s == *' 200 '* ]]"]

# SIGTERM starts the graceful shutdown; allow it 60 s (docker stop -t 60,
# stop_grace_period: 60s in compose), as the systemd unit does.
STOPSIGNAL SIGTERM
ENTRYPOINT ["jobdrop"]
CMD ["run", "--config", "/etc/jobdrop/jobdrop.yaml"]
