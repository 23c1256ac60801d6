import ReactiveDefaultsCLI

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

exit(RDefaults.run(Array(CommandLine.arguments.dropFirst())).rawValue)
