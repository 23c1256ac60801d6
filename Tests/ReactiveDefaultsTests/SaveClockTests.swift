import Foundation
import TestSupport
import Testing

@_spi(Tools) @testable import ReactiveDefaults

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif
// `timespec`'s members may come through these on Linux, depending on the modules the build loads (see the library's
// FileSystem.swift).
#if canImport(CDispatch)
  import CDispatch
#endif
#if canImport(CoreFoundation)
  import CoreFoundation
#endif

/// When a save was complete on disk (``DefaultsStore/lastSaveCommittedNanoseconds``): the moment the benchmark's
/// cross-process latency starts from, on the monotonic clock every process shares.
@Suite struct SaveClockTests {
  static func now() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
  }

  @Test(arguments: ["suite", "file store"])
  func aSaveRecordsWhenItWasCompleteOnDisk(_ kind: String) async throws {
    let folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("SaveClockTests.\(UUID())")
    defer { try? FileManager.default.removeItem(at: folder) }
    let store =
      kind == "suite"
      ? makeStore().0 : try #require(DefaultsStore(fileURL: folder.appendingPathComponent("s.plist")))
    defer { store.suiteName.map(removeSuiteFile) }
    #expect(store.lastSaveCommittedNanoseconds == nil)
    let before = Self.now()
    store[.count] = 1
    try await offThePool { try store.save() }
    let after = Self.now()
    #if canImport(Darwin)
      // The preferences daemon writes a suite's file there: no moment of the library's to report.
      if kind == "suite" {
        #expect(store.lastSaveCommittedNanoseconds == nil)
        return
      }
    #endif
    let committed = try #require(store.lastSaveCommittedNanoseconds)
    #expect(committed > before && committed <= after)
    // The next save moves it on.
    store[.count] = 2
    try await offThePool { try store.save() }
    #expect(try #require(store.lastSaveCommittedNanoseconds) > committed)
  }
}
