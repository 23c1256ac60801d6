#if canImport(Darwin)
  import Darwin

  func currentThreadID() -> UInt { UInt(bitPattern: pthread_self()) }
#elseif canImport(Glibc)
  import Glibc

  func currentThreadID() -> UInt { UInt(pthread_self()) }
#elseif canImport(Musl)
  import Musl

  func currentThreadID() -> UInt { UInt(bitPattern: pthread_self()) }
#endif
