// swift-tools-version:6.1
import PackageDescription

let strictSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "jetstream-gateway",
    // Mutex (Synchronization) sets the floor on every Apple platform: macOS 15, iOS 18, tvOS 18, watchOS 11,
    // visionOS 2. Only the client products (Jetstream, JetstreamModel, JetstreamClient) build there: the
    // server needs Linux system libraries (Tests/architecture/check-client-closure.py).
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .executable(name: "jetstream", targets: ["JetstreamCLI"]),
        .library(name: "JetstreamModel", targets: ["JetstreamModel"]),
        .library(name: "Jetstream", targets: ["Jetstream"]),
        .library(name: "JetstreamClient", targets: ["JetstreamClient"]),
        .library(name: "HTTPServer", targets: ["HTTPServer"]),
        // The gateway as a library: a server of your own with its own methods (Examples/CartServer).
        .library(name: "GatewayServer", targets: ["GatewayServer"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.6.0"),
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.2.2"),
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.1"),
        // Metrics API and its Prometheus text exposition (neither pulls SwiftNIO).
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        // JWT verification (HS256/ES256/RS256) on swift-crypto; no SwiftNIO.
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.7.1"),
        // HdrHistogram for the load generator's latency percentiles (depends on swift-numerics only).
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift.git", from: "0.2.0"),
    ],
    // Sources/ is grouped by layer: CShims (system libraries), Model (JSON and the model core),
    // Transport (sockets, HTTP/1.1, HTTP/2, compression, the HTTP engine), Engine (stores and
    // scopes), Server (the gateway and the `jetstream` command), Clients (the typed framework, the
    // Swift client, the SSE parser) and Tools (load generator, benchmarks, test support).
    targets: [
        // C shims (system libraries; nghttp2 and zlib from Debian's -dev packages).
        .systemLibrary(name: "CLinuxIO", path: "Sources/CShims/CLinuxIO"),
        .systemLibrary(
            name: "CNGHTTP2", path: "Sources/CShims/CNGHTTP2", pkgConfig: "libnghttp2",
            providers: [.apt(["libnghttp2-dev"])]),
        .systemLibrary(
            name: "CZlib", path: "Sources/CShims/CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        .systemLibrary(name: "CSQLite", path: "Sources/CShims/CSQLite", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(
            name: "CLibPQ", path: "Sources/CShims/CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),

        // JSON: parser, writer and values; used by the model, the gateway and the load generator.
        .target(name: "JetstreamJSON", path: "Sources/Model/JetstreamJSON", swiftSettings: strictSettings),
        // Model core: pure Swift, no I/O beyond reading a schema file.
        .target(
            name: "JetstreamModel",
            dependencies: [
                "JetstreamJSON",
                .product(name: "Yams", package: "Yams"),
                // Persistent hash trie: snapshots share structure, so a change set costs O(touched).
                .product(name: "HashTreeCollections", package: "swift-collections"),
            ],
            path: "Sources/Model/JetstreamModel", swiftSettings: strictSettings),
        // The bench scope (layered canvas) shared by ModelBench and HotPathBench.
        .target(
            name: "BenchSupport", dependencies: ["JetstreamModel"], path: "Sources/Tools/BenchSupport",
            swiftSettings: strictSettings),
        // `swift run -c release ModelBench`: model-core benchmark (docs/benchmarks.md).
        .executableTarget(
            name: "ModelBench", dependencies: ["JetstreamModel", "BenchSupport"], path: "Sources/Tools/ModelBench",
            swiftSettings: strictSettings),
        // The typed model framework of the original (ModelObject, Scope, observation).
        .target(
            name: "Jetstream", dependencies: ["JetstreamModel"], path: "Sources/Clients/Jetstream",
            swiftSettings: strictSettings),
        // The Swift client: Foundation (URLSession) and the shared model and SSE parser; no SwiftNIO.
        .target(
            name: "JetstreamClient",
            dependencies: ["Jetstream", "JetstreamModel", "JetstreamJSON", "ServerSentEvents"],
            path: "Sources/Clients/JetstreamClient", swiftSettings: strictSettings),
        // `ClientBench`: the Swift client against `jetstream serve` — remote apply with observers,
        // end to end A → B (docs/benchmarks.md, "Swift client").
        .executableTarget(
            name: "ClientBench",
            dependencies: [
                "Jetstream", "JetstreamClient", "JetstreamModel", "ServerSentEvents", "CanvasModel", "BenchSupport",
            ],
            path: "Sources/Tools/ClientBench", swiftSettings: strictSettings),
        // The canvas of shapes as typed classes, once: the example, ClientBench and the tests use it.
        .target(
            name: "CanvasModel", dependencies: ["Jetstream"], path: "Examples/CanvasModel",
            swiftSettings: strictSettings),
        .executableTarget(
            name: "CanvasExample", dependencies: ["Jetstream", "JetstreamClient", "CanvasModel"],
            path: "Examples/Canvas", swiftSettings: strictSettings),
        // A server of your own on the gateway's library, with methods (docs/methods.md).
        .executableTarget(
            name: "CartServer",
            dependencies: [
                "GatewayServer", "ScopeEngine", "JetstreamModel", "JetstreamJSON",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Examples/CartServer", swiftSettings: strictSettings),
        // A canvas kept on disk between runs: the client's storage (docs/offline.md).
        .executableTarget(
            name: "OfflineExample", dependencies: ["Jetstream", "JetstreamClient", "CanvasModel"],
            path: "Examples/Offline", swiftSettings: strictSettings),

        // Server engine: socket loop (no HTTP) → HTTP/1 parser (pure) → HTTP/2, compression → server.
        .target(
            name: "SocketLoop",
            dependencies: ["CLinuxIO", .product(name: "Logging", package: "swift-log")],
            path: "Sources/Transport/SocketLoop", swiftSettings: strictSettings),
        // Dependency-free so the libFuzzer target can compile its sources with plain swiftc.
        .target(name: "HTTP1", path: "Sources/Transport/HTTP1", swiftSettings: strictSettings),
        .target(
            name: "HTTP2",
            dependencies: ["CNGHTTP2", .product(name: "HTTPTypes", package: "swift-http-types")],
            path: "Sources/Transport/HTTP2", swiftSettings: strictSettings),
        .target(
            name: "HTTPCompression", dependencies: ["CZlib"], path: "Sources/Transport/HTTPCompression",
            swiftSettings: strictSettings),
        .target(
            name: "HTTPServer",
            dependencies: [
                "SocketLoop", "HTTP1", "HTTP2", "HTTPCompression",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Sources/Transport/HTTPServer", swiftSettings: strictSettings),
        // A tiny app on the engine for live tests and benchmarks of the engine alone.
        .executableTarget(
            name: "HTTPTestServer",
            dependencies: [
                "HTTPServer", "SocketLoop",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            path: "Sources/Tools/HTTPTestServer",
            swiftSettings: strictSettings),

        // `swift run -c release HotPathBench`: microbenchmarks of the per-request hot paths
        // (HTTP/1 parse, fragment decode/apply, SSE encode, response encode; docs/benchmarks.md).
        .executableTarget(
            name: "HotPathBench",
            dependencies: [
                "HTTP1", "HTTP2", "HTTPServer", "SocketLoop", "JetstreamModel", "ScopeEngine", "Gateway",
                "BenchSupport", .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            path: "Sources/Tools/HotPathBench",
            swiftSettings: strictSettings),

        // Durable change log + snapshots: the store interface and the embedded SQLite store.
        .target(
            name: "Store",
            dependencies: ["CSQLite", .product(name: "Logging", package: "swift-log")],
            path: "Sources/Engine/Store", swiftSettings: strictSettings),
        // Appends in a loop and prints each acknowledged version: the crash-safety test kills it.
        .executableTarget(
            name: "StoreCrashWriter", dependencies: ["Store"], path: "Sources/Tools/StoreCrashWriter",
            swiftSettings: strictSettings),
        // The shared store for several gateway nodes: PostgreSQL through libpq (non-blocking, pipelined).
        .target(
            name: "PostgresStore",
            dependencies: ["CLibPQ", "Store", .product(name: "Logging", package: "swift-log")],
            path: "Sources/Engine/PostgresStore", swiftSettings: strictSettings),
        .executableTarget(
            name: "StoreBench", dependencies: ["Store"], path: "Sources/Tools/StoreBench", swiftSettings: strictSettings),

        // Scopes without HTTP: one writer per scope, history and exact resume, idempotency,
        // recovery, versions committed elsewhere. Imports no HTTP and no sockets (Tests/architecture).
        .target(
            name: "ScopeEngine",
            dependencies: ["JetstreamModel", "Store", .product(name: "Logging", package: "swift-log")],
            path: "Sources/Engine/ScopeEngine", swiftSettings: strictSettings),

        // The HTTP face: routes, problem+json, auth, CORS, metrics, SSE framing.
        .target(
            name: "Gateway",
            dependencies: [
                "JetstreamModel", "ScopeEngine", "HTTPServer", "HTTPCompression", "Store", "SocketLoop",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "HeapModule", package: "swift-collections"),
                .product(name: "JWTKit", package: "jwt-kit"),
            ],
            path: "Sources/Server/Gateway",
            // The JS client and the demo are symlinks to their sources in Clients/js.
            resources: [
                .embedInCode("Resources/openapi.yaml"), .embedInCode("Resources/jetstream.mjs"),
                .embedInCode("Resources/jetstream.d.ts"), .embedInCode("Resources/errors.mjs"),
                .embedInCode("Resources/schema.mjs"), .embedInCode("Resources/state.mjs"),
                .embedInCode("Resources/sync-core.mjs"), .embedInCode("Resources/connection-state.mjs"),
                .embedInCode("Resources/backoff.mjs"), .embedInCode("Resources/sse-parser.mjs"),
                .embedInCode("Resources/scope.mjs"), .embedInCode("Resources/connection.mjs"),
                .embedInCode("Resources/shared-stream.mjs"), .embedInCode("Resources/scope-copy.mjs"),
                .embedInCode("Resources/scope-past.mjs"), .embedInCode("Resources/presence.mjs"),
                .embedInCode("Resources/stored-copy.mjs"),
                .embedInCode("Resources/demo-index.html"),
                .embedInCode("Resources/demo.css"), .embedInCode("Resources/demo.mjs"),
            ],
            swiftSettings: strictSettings),

        // One builder from a configuration to a running server: store, engine, routes, lifecycle.
        .target(
            name: "GatewayServer",
            dependencies: [
                "Gateway", "ScopeEngine", "HTTPServer", "Store", "PostgresStore", "JetstreamModel", "SocketLoop",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            path: "Sources/Server/GatewayServer", swiftSettings: strictSettings),

        // The client side of `text/event-stream`: an incremental parser, pure stdlib (no Foundation, no
        // sockets), shared by the load generator and Swift clients.
        .target(name: "ServerSentEvents", path: "Sources/Clients/ServerSentEvents", swiftSettings: strictSettings),

        // `jetstream bench`: an epoll HTTP/1.1 + SSE load generator (client side of the socket shim).
        .target(
            name: "LoadGenerator",
            dependencies: [
                "CLinuxIO", "SocketLoop", "JetstreamJSON", "ServerSentEvents",
                .product(name: "Histogram", package: "hdrhistogram-swift"),
            ],
            path: "Sources/Tools/LoadGenerator", swiftSettings: strictSettings),

        // The `jetstream` command.
        .executableTarget(
            name: "JetstreamCLI",
            dependencies: [
                "JetstreamModel", "HTTPServer", "Store", "ScopeEngine", "Gateway", "GatewayServer", "SocketLoop",
                "LoadGenerator",
                .product(name: "Yams", package: "Yams"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/Server/JetstreamCLI", swiftSettings: strictSettings),

        // Helpers shared by the test targets (a blocking loopback client socket).
        .target(name: "TestSupport", path: "Sources/Tools/TestSupport", swiftSettings: strictSettings),

        .testTarget(
            name: "JetstreamModelTests",
            dependencies: [
                "JetstreamModel", .product(name: "PropertyBased", package: "swift-property-based"),
            ],
            swiftSettings: strictSettings),
        .testTarget(
            name: "JetstreamTests", dependencies: ["Jetstream", "JetstreamModel", "CanvasModel"],
            swiftSettings: strictSettings),
        // The original Jetstream README's snippets, compiled through the deprecated seed names.
        .testTarget(
            name: "SeedNamesTests", dependencies: ["Jetstream", "JetstreamClient", "JetstreamModel"],
            swiftSettings: strictSettings),
        // Typed clients against the real `jetstream` binary on loopback (a harness in Support/),
        // and the sync algorithm alone. JWTKit mints the HS256 tokens of the token-refresh test;
        // TestSupport's LossyLink puts a lossy network between the clients and the server.
        .testTarget(
            name: "JetstreamClientTests",
            dependencies: [
                "JetstreamClient", "Jetstream", "JetstreamModel", "JetstreamJSON", "CanvasModel", "BenchSupport",
                "TestSupport", .product(name: "JWTKit", package: "jwt-kit"),
            ],
            swiftSettings: strictSettings),
        .testTarget(
            name: "SocketLoopTests",
            dependencies: ["SocketLoop", "CLinuxIO", "TestSupport", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictSettings),
        .testTarget(name: "HTTP1Tests", dependencies: ["HTTP1"], swiftSettings: strictSettings),
        .testTarget(
            name: "HTTP2Tests",
            dependencies: [
                "HTTP2", "HTTPCompression", "CNGHTTP2", "CZlib",
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: strictSettings),
        .testTarget(
            name: "HTTPServerTests",
            dependencies: [
                "HTTPServer", "HTTP1", "SocketLoop", "TestSupport",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings),
        .testTarget(
            name: "LoadGeneratorTests",
            dependencies: ["LoadGenerator", "SocketLoop", .product(name: "PropertyBased", package: "swift-property-based")],
            swiftSettings: strictSettings),
        .testTarget(
            name: "ServerSentEventsTests",
            dependencies: ["ServerSentEvents", .product(name: "PropertyBased", package: "swift-property-based")],
            swiftSettings: strictSettings),
        .testTarget(
            name: "StoreTests", dependencies: ["Store", "PostgresStore", "CSQLite", "TestSupport"],
            swiftSettings: strictSettings),
        .testTarget(
            name: "ScopeEngineTests",
            dependencies: [
                "ScopeEngine", "JetstreamModel", "Store", "PostgresStore", "TestSupport",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings),
        .testTarget(
            name: "GatewayTests",
            dependencies: [
                "Gateway", "GatewayServer", "ScopeEngine", "JetstreamModel", "HTTPServer", "Store", "TestSupport", "SocketLoop",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings),
    ]
)
