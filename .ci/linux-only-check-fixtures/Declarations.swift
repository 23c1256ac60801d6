// Declarations made inside Linux-only regions, used only inside Linux-only regions (and a name declared for both
// platforms): the check must let every line through. Unguarded.swift uses them where Apple would not build.
import Foundation

#if os(Linux)
  enum LinuxOnlyPreferences {
    static func synchronize(domain: String) -> Bool { true }
  }

  func linuxOnlyHelper() -> Int { 1 }
  let linuxOnlyCount = 3
#endif

struct Storage {
  var value = 0
  #if os(Linux)
    static let directReadsAfterWrite = 64
    func linuxOnlyMember() -> Int { Self.directReadsAfterWrite }
  #endif
  func shared() -> Int { 2 }
}

#if canImport(Darwin)
  func bothPlatforms() -> Int { 1 }
#else
  func bothPlatforms() -> Int { linuxOnlyHelper() + Storage.directReadsAfterWrite }
#endif

#if !canImport(Darwin)
  let flushed = LinuxOnlyPreferences.synchronize(domain: "a")
#endif

#if !os(Linux)
  let apple = 1
#else
  let linux = linuxOnlyHelper() + linuxOnlyCount
#endif

#if os(macOS) || os(Linux)
  let both = bothPlatforms() + Storage().shared()
#endif

#if DEBUG && compiler(>=6.1)
  let debug = "LinuxOnlyPreferences in a string"
#endif
