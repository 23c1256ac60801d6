// The `watch` command.
import Dispatch
@_spi(Tools) import ReactiveDefaults
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

extension Commands {
  static func watch(_ arguments: [String]) throws -> Never {
    let words = try Words(arguments, command: "watch", options: ["--json"])
    let json = words.options.contains("--json")
    guard let domain = words.positional.first else {
      throw RDefaults.usage("'watch' needs a domain.", command: "watch")
    }
    let store = try openStore(domain, command: "watch", reading: true)
    let keys = Array(words.positional.dropFirst())
    let print: @Sendable (String, PropertyListValue?) -> Void = { key, value in
      if json {
        RDefaults.printOut(Formatting.jsonLine(key: key, value: value))
      } else {
        let name = Formatting.listing(.string(key))
        RDefaults.printOut(value.map { "\(name) = \(Formatting.inline($0))" } ?? "\(name) removed")
      }
    }
    var tokens: [DefaultsObservation] = []
    if keys.isEmpty {
      let snapshot = Mutex(contents(store))
      guard
        let token = store.watchSuiteFile({
          let now = contents(store)
          let changes = snapshot.withLock { old -> [(String, PropertyListValue?)] in
            defer { old = now }
            return Set(old.keys).union(now.keys).sorted().filter { key in
              switch (old[key], now[key]) {
              case (nil, nil): false
              case (let before?, let after?): !before.isSameSetting(as: after)
              default: true
              }
            }.map { ($0.string, now[$0]) }
          }
          for (key, value) in changes { print(key, value) }
        })
      else {
        throw Failure(
          message: "cannot watch a whole domain on this platform (its file belongs to the preferences daemon).",
          hint: "Name the keys to watch: rdefaults watch \(targetArgument(domain)) KEY…", code: .failure)
      }
      tokens.append(token)
    } else {
      for key in keys {
        tokens.append(store.property(DefaultsKey<PropertyListValue?>(key)).observe(initial: false) { print(key, $0) })
      }
    }
    // Installed before anything is printed, synchronously: a Dispatch signal source registers on a background
    // thread, so a Ctrl-C (or SIGTERM) right after the "Watching" line could be ignored and lost. `watch` writes
    // nothing, so ending at once (`_exit`, safe in a signal handler) loses nothing.
    for signalNumber in [SIGINT, SIGTERM] { signal(signalNumber) { _ in _exit(0) } }
    RDefaults.printError(
      "Watching \(targetName(domain))"
        + (keys.isEmpty ? "" : " (" + keys.map { Formatting.listing(.string($0)) }.joined(separator: ", ") + ")")
        + "; Ctrl-C stops.")
    withExtendedLifetime(tokens) { dispatchMain() }
  }
}
