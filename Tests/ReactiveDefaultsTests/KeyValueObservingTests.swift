import Dispatch
import Foundation
import Synchronization
import TestSupport
import Testing

@testable import ReactiveDefaults

@Suite struct KeyValueObservingTests {
  /// Another process's write (Apple reports it through key-value observing only) reaches observers once; our own
  /// writes, which key-value observing also reports from inside `set`, are not re-read.
  @Test func anotherProcessesWriteReachesObserversOnceAndOurOwnAreNotReadAgain() async {
    let (store, storage) = appleLikeStore { _, _ in }
    let seen = Recorder<Int>()
    let token = store.property(.count).observe { seen.append($0) }
    for value in 1...3 { store[.count] = value }
    #expect(store.hub.keyReportCount.load(ordering: .relaxed) == 0, "our own writes were re-read")
    storage.writeFromOutside(.integer(9), forKey: "count")
    #expect(await seen.wait { $0.last == 9 })
    #expect(store.hub.keyReportCount.load(ordering: .relaxed) == 1)
    #expect(seen.values == [0, 1, 2, 3, 9])
    withExtendedLifetime(token) {}
  }

  /// Key-value observing cannot address keys with `.` or `@`: they are never registered, so another process's
  /// write of one is not seen (documented), while a write in this process still is (the change notification).
  @Test func keysKeyValueObservingCannotAddressFallBackToTheNotification() async {
    let (store, storage) = appleLikeStore { _, _ in }
    let dotted = DefaultsKey<Int>("player.volume", default: 0)
    let dottedSeen = Recorder<Int>()
    let countSeen = Recorder<Int>()
    let tokens = [
      store.property(dotted).observe { dottedSeen.append($0) },
      store.property(.count).observe { countSeen.append($0) },
    ]
    if case let memory as MemoryStorage = store.hub.storage {
      #expect(memory.registrations.registeredKeys == ["count"])
    }
    storage.writeFromOutside(.integer(5), forKey: "player.volume")
    storage.writeFromOutside(.integer(1), forKey: "count")
    #expect(await countSeen.wait { $0.last == 1 })
    #expect(dottedSeen.values == [0], "a foreign write of an unaddressable key cannot be seen")
    storage.writeInProcess(.integer(6), forKey: "player.volume")
    #expect(await dottedSeen.wait { $0.last == 6 })
    withExtendedLifetime(tokens) {}
  }

  /// A key is registered with its first observer and unregistered with its last, whatever the threads.
  @Test func registrationsFollowTheFirstAndLastObserverOfEachKey() {
    let (store, storage) = appleLikeStore { _, _ in }
    let first = store.property(.count).observe { _ in }
    let second = store.property(.count).observe { _ in }
    #expect(storage.registrations.registeredKeys == ["count"])
    first.cancel()
    #expect(storage.registrations.registeredKeys == ["count"])
    second.cancel()
    #expect(storage.registrations.registeredKeys.isEmpty)
    DispatchQueue.concurrentPerform(iterations: 8) { index in
      let key = DefaultsKey<Int>("key\(index % 3)", default: 0)
      for _ in 0..<200 { store.property(key).observe { _ in }.cancel() }
    }
    #expect(storage.registrations.registeredKeys.isEmpty)
    let kept = (0..<3).map { store.property(DefaultsKey<Int>("key\($0)", default: 0)).observe { _ in } }
    #expect(storage.registrations.registeredKeys == ["key0", "key1", "key2"])
    withExtendedLifetime(kept) {}
  }

  @Test func theRegistrationStateMachine() {
    var state = KeyRegistrations.State()
    var apply = state.change("a", by: 1)
    #expect(apply)
    var action = state.next()
    #expect(action == .register("a"))
    action = state.next()
    #expect(action == .done)
    apply = state.change("a.b", by: 1)
    #expect(!apply, "never registered")
    apply = state.change("a", by: -1)
    #expect(apply)
    // A report arriving while another thread applies: recorded, applied by that thread.
    apply = state.change("c", by: 1)
    #expect(!apply)
    var actions: [KeyRegistrations.Action] = []
    repeat { actions.append(state.next()) } while actions.last != .done
    #expect(Set(actions) == [.register("c"), .unregister("a"), .done])
    #expect(state.registered == ["c"])
    // A −1 arriving before its +1 (two threads): the key ends unregistered, not registered for good.
    var early = KeyRegistrations.State()
    _ = early.change("d", by: -1)
    _ = early.change("d", by: 1)
    while early.next() != .done {}
    #expect(early.registered.isEmpty && early.wanted.isEmpty)
  }

  /// Key-value observing splits a key path on the scalar `.` and reads `@` as an operator: a key holding either as a
  /// scalar is never registered, even where it hides inside a Character (a dot or an at sign with a combining accent).
  @Test(arguments: ["a.b", "a.\u{301}b", "@count", "x@\u{301}", ".\u{301}", ""])
  func keysKeyValueObservingWouldSplitAreNotRegistered(_ key: String) {
    #expect(!KeyRegistrations.canRegister(key))
    var state = KeyRegistrations.State()
    let applies = state.change(key, by: 1)
    #expect(!applies, "never registered")
  }

  @Test(arguments: ["volume", "caf\u{E9}", "cafe\u{301}", "a\u{2024}b", "\u{FF20}"])
  func otherKeysAreRegistered(_ key: String) {
    #expect(KeyRegistrations.canRegister(key))
  }
}
