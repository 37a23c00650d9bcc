# syntax=docker/dockerfile:1

# Build a static binary.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/taskhook ./cmd/server

# Run it as a non-root user in an image with no shell.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/taskhook /taskhook
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/taskhook"]
