# Installs headers, gpuplan::gpuplan / gpuplan::calibrate / gpuplan::io, a package config with a
# version file, and a pkg-config file. Consumers do not inherit warning flags.
include(CMakePackageConfigHelpers)
set(GPUPLAN_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/gpuplan)

install(DIRECTORY include/gpuplan DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/include/gpuplan/version.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/gpuplan)
install(TARGETS gpuplan gpuplan_calibrate gpuplan_io EXPORT gpuplanTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(TARGET gpuplan_cli)
  install(TARGETS gpuplan_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(EXPORT gpuplanTargets NAMESPACE gpuplan:: DESTINATION ${GPUPLAN_CMAKE_DIR})

configure_package_config_file(cmake/gpuplanConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/gpuplanConfig.cmake
                              INSTALL_DESTINATION ${GPUPLAN_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/gpuplanConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/gpuplanConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/gpuplanConfigVersion.cmake
        DESTINATION ${GPUPLAN_CMAKE_DIR})

configure_file(cmake/gpuplan.pc.in ${CMAKE_CURRENT_BINARY_DIR}/gpuplan.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/gpuplan.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
