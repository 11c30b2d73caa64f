# One image, four services: Cloud Run picks the binary with the container command (/webhook,
# /worker, /api or /console, terraform/services.tf). Built by cloudbuild.yaml.

FROM golang:1.26 AS build
WORKDIR /src

# Modules first, so a source-only change reuses the download layer.
COPY go.mod go.sum ./
RUN go mod download

COPY . .
# Static binaries (no cgo) for a distroless base; -trimpath keeps build paths out of them, -s -w
# strips symbol tables. Each lands in /out under its directory's name. The emulators and other
# local tools under cmd/ stay out of the image.
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/ ./cmd/webhook ./cmd/worker ./cmd/api ./cmd/console ./cmd/wapipe

# static-debian12 has CA certificates (for Google APIs and graph.facebook.com) and tzdata, and no
# shell; :nonroot runs as uid 65532.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/webhook /webhook
COPY --from=build /out/worker /worker
COPY --from=build /out/api /api
COPY --from=build /out/console /console
# The operator CLI (cmd/wapipe), so it can run where the services do, e.g. as a Cloud Run job.
COPY --from=build /out/wapipe /wapipe
USER nonroot:nonroot
EXPOSE 8080
ENTRYPOINT ["/webhook"]
