import ReactiveDefaultsCLI

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

exit(RDefaults.main().rawValue)
