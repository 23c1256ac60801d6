import Foundation
import TestSupport
import Testing

@testable import ReactiveDefaults

@Suite struct StreamTests {
  @Test(arguments: Storage.allCases) func streamYieldsTheCurrentValueThenDistinctChanges(storage: Storage) async {
    let (store, _) = makeStore(storage)
    store[.count] = 1
    let seen = Recorder<Int>()
    let stream = store.property(.count).values
    // On a thread of its own: the first value must not wait for a thread the other tests keep busy.
    let consumer = Task(executorPreference: testThreadExecutor) {
      for await value in stream { seen.append(value) }
    }
    #expect(await seen.wait { $0 == [1] })
    store[.count] = 2
    #expect(await seen.wait { $0.last == 2 })
    store[.count] = 2
    store[.count] = 3
    #expect(await seen.wait { $0.last == 3 })
    #expect(seen.values == [1, 2, 3])
    consumer.cancel()
  }

  @Test(arguments: Storage.allCases) func slowConsumersGetTheNewestValueOnly(storage: Storage) async {
    let (store, _) = makeStore(storage)
    let stream = store.property(.count).values
    // Nobody consumes yet: the buffer keeps only the newest value.
    for step in 1...100 { store[.count] = step }
    var iterator = stream.makeAsyncIterator()
    #expect(await iterator.next() == 100)
    store[.count] = 101
    #expect(await iterator.next() == 101)
  }

  @Test(arguments: Storage.allCases) func cancellingTheConsumerRemovesTheObserver(storage: Storage) async {
    let (store, _) = makeStore(storage)
    let seen = Recorder<Int>()
    let stream = store.property(.count).values
    // On a thread of its own: the first value must not wait for a thread the other tests keep busy.
    let consumer = Task(executorPreference: testThreadExecutor) {
      for await value in stream { seen.append(value) }
      seen.append(-1)  // the loop ended
    }
    #expect(await seen.wait { $0 == [0] })
    consumer.cancel()
    #expect(await seen.wait { $0.last == -1 })
    #expect(store.hub.observerCount == 0)
    store[.count] = 5
    #expect(seen.values == [0, -1])
  }

  @Test(arguments: Storage.allCases) func droppingAStreamRemovesItsObserver(storage: Storage) async {
    let (store, _) = makeStore(storage)
    let seen = Recorder<Int>()
    do {
      let stream = store.property(.count).values
      #expect(store.hub.observerCount == 1)
      _ = stream
    }
    #expect(store.hub.observerCount == 0)
    let token = store.property(.count).observe(initial: false) { seen.append($0) }
    store[.count] = 1
    #expect(seen.values == [1])
    withExtendedLifetime(token) {}
  }
}
