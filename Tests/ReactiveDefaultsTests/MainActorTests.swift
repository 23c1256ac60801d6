import Dispatch
import Foundation
import Observation
import TestSupport
import Testing

@testable import ReactiveDefaults

/// What a main-actor handler saw, on the main actor.
@MainActor private final class Seen<Value> {
  var values: [Value] = []
  var offMain = 0

  func record(_ value: Value) {
    if !isMainThread() { offMain += 1 }
    values.append(value)
  }
}

/// Resumes once the main queue has run everything enqueued on it before this call: the main actor is driven by
/// awaiting this, with no sleep.
@MainActor private func mainQueueDrained() async {
  await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
    DispatchQueue.main.async { continuation.resume() }
  }
}

/// Observation on the main actor (``DefaultsDelivery/mainActor``): where the handler runs, what it sees of a burst
/// of background writes, of its own writes, and after a cancel; several keys; a binding to main-actor state; and
/// `values` consumed on the main actor. The main queue is driven by awaiting it (``mainQueueDrained()``).
@Suite struct MainActorTests {
  private let count = DefaultsKey<Int>("count", default: 0)
  private let name = DefaultsKey<String>("name", default: "")

  /// 10,000 writes from 4 threads reach a main-actor handler on the main thread only, each thread's values in the
  /// order it wrote them, never a value twice in a row, the last one equal to the stored value.
  @Test(arguments: Storage.allCases) @MainActor func aBurstFromFourThreadsArrivesInOrderOnTheMainThread(
    _ storage: Storage
  ) async {
    let (store, issues) = makeStore(storage)
    let seen = Seen<Int>()
    let last = Recorder<Int>()
    let token = store.property(count).observe(on: .mainActor) { value in
      seen.record(value)
      last.append(value)
    }
    #expect(seen.values == [0])  // the initial value, before `observe` returned
    let perThread = 2_500
    await onThreadsOfTheirOwn(4) { thread in
      for index in 1...perThread { store[count] = (thread + 1) * 1_000_000 + index }
    }
    let stored = store[count]
    #expect(await last.wait { $0.last == stored })
    await mainQueueDrained()
    token.cancel()
    #expect(seen.offMain == 0)
    #expect(seen.values.last == stored)
    #expect(zip(seen.values, seen.values.dropFirst()).allSatisfy { $0 != $1 })
    for thread in 1...4 {
      let ofThread = seen.values.filter { $0 / 1_000_000 == thread }
      #expect(ofThread == ofThread.sorted(), "thread \(thread)'s values arrived out of order")
    }
    // Coalesced while the main actor was busy: fewer calls than writes, but the newest value each time.
    #expect(seen.values.count <= 4 * perThread + 1)
    #expect(issues.values.isEmpty)
  }

  /// A write on the main actor reaches the handler before the setter returns; so does a write from inside the
  /// handler, right after the handler returns, not nested.
  @Test(arguments: Storage.allCases) @MainActor func aWriteOnTheMainActorIsSeenBeforeTheSetterReturns(
    _ storage: Storage
  ) {
    let (store, _) = makeStore(storage)
    let property = store.property(count)
    let seen = Seen<Int>()
    let depth = Seen<Int>()  // the nesting depth at each call
    let token = property.observe(on: .mainActor) { value in
      depth.record((depth.values.last ?? 0) + 1)
      seen.record(value)
      if value == 1 { property.value = 2 }
      depth.record((depth.values.last ?? 1) - 1)
    }
    #expect(seen.values == [0])
    property.value = 1
    #expect(seen.values == [0, 1, 2])
    #expect(depth.values.max() == 1)
    property.value = 2  // the same value: nothing
    #expect(seen.values == [0, 1, 2])
    token.cancel()
    property.value = 3
    #expect(seen.values == [0, 1, 2])
  }

  /// Values enqueued for the main actor are dropped when the token is cancelled there first; later writes are not
  /// delivered either. (The main thread is held while the background write runs, so its delivery is still enqueued
  /// when `cancel()` runs.)
  @Test(arguments: Storage.allCases) @MainActor func cancellingOnTheMainActorDropsWhatWasEnqueued(
    _ storage: Storage
  ) async {
    let (store, _) = makeStore(storage)
    let seen = Seen<Int>()
    let token = store.property(count).observe(on: .mainActor, initial: false) { seen.record($0) }
    let written = DispatchSemaphore(value: 0)
    Thread {
      store[count] = 7
      written.signal()
    }.start()
    written.wait()  // the main thread, not one of Swift concurrency's
    token.cancel()
    await mainQueueDrained()
    #expect(seen.values.isEmpty)
    await onThreadsOfTheirOwn(1) { _ in store[count] = 8 }
    await mainQueueDrained()
    #expect(seen.values.isEmpty)
  }

  /// Called off the main actor, the initial value arrives on it, and later changes follow it in order.
  @Test func observingOffTheMainActorDeliversTheInitialValueThere() async {
    let (store, _) = makeStore(.memory)
    store[count] = 5
    let values = Recorder<Int>()
    let onMain = Recorder<Bool>()
    let token = store.property(count).observe(on: .mainActor) { value in
      onMain.append(isMainThread())
      values.append(value)
    }
    #expect(await values.wait { $0 == [5] })
    store[count] = 6
    #expect(await values.wait { $0 == [5, 6] })
    #expect(onMain.values.allSatisfy { $0 })
    token.cancel()
  }

  /// Several keys on the main actor: the current values first, then all of them on each change, synchronously for
  /// a write on the main actor, enqueued for one from another thread.
  @Test(arguments: Storage.allCases) @MainActor func severalKeysOnTheMainActor(_ storage: Storage) async {
    let (store, _) = makeStore(storage)
    let seen = Seen<String>()
    let last = Recorder<String>()
    let token = store.observe(count, name, on: .mainActor) { count, name in
      seen.record("\(count) \(name)")
      last.append("\(count) \(name)")
    }
    #expect(seen.values == ["0 "])
    store[name] = "a"
    #expect(seen.values == ["0 ", "0 a"])
    await onThreadsOfTheirOwn(1) { _ in store[count] = 3 }
    #expect(await last.wait { $0.last == "3 a" })
    #expect(seen.offMain == 0)
    token.cancel()
    store[name] = "b"
    await mainQueueDrained()
    #expect(seen.values.last == "3 a")
  }

  /// A binding to main-actor state: the state takes the setting at once, a write of the setting on the main actor
  /// reaches it before the setter returns, and a change of the state reaches the setting once the main actor runs;
  /// neither echoes. The binding ends with its token.
  @Test(arguments: Storage.allCases) @MainActor func aBindingToMainActorStateGoesBothWays(_ storage: Storage) async {
    let (store, _) = makeStore(storage)
    store[count] = 4
    let model = CounterModel()
    let link = store.property(count).bind(to: model, \.count)
    #expect(model.count == 4)
    store[count] = 5
    #expect(model.count == 5)
    model.count = 9
    await mainQueueDrained()
    #expect(store[count] == 9)
    await onThreadsOfTheirOwn(1) { _ in store[count] = 11 }
    await mainQueueDrained()
    #expect(model.count == 11)
    link.cancel()
    model.count = 20
    store[count] = 21
    await mainQueueDrained()
    #expect(store[count] == 21 && model.count == 20)
  }

  /// `values` consumed in a main-actor task: the loop resumes on the main actor, and a burst from another thread
  /// arrives as increasing values ending with the last one (the buffer keeps only the newest).
  @Test @MainActor func valuesConsumedOnTheMainActorResumeThere() async {
    let (store, _) = makeStore(.memory)
    let property = store.property(count)
    let consumer = Task { @MainActor in
      var seen: [Int] = []
      for await value in property.values {
        MainActor.assertIsolated()
        seen.append(value)
        if value == 1_000 { break }
      }
      return seen
    }
    await onThreadsOfTheirOwn(1) { _ in
      for value in 1...1_000 { store[count] = value }
    }
    let seen = await consumer.value
    #expect(seen.last == 1_000)
    #expect(seen == seen.sorted())
  }
}

@MainActor @Observable private final class CounterModel {
  var count = 0
}
