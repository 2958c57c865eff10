# Install rules and CPack (DEB): binaries, built-in models, desktop integration, man page.
include(GNUInstallDirs)
set(ATTNSCOPE_APP_ID "io.github.attnscope.attnscope")

# The compute library (private to attnscope) in <libdir>/attnscope, its AVX-512 build in glibc-hwcaps/x86-64-v4
# below it where the loader looks first on CPUs that have AVX-512; the programs find it through their RUNPATH.
set(ATTNSCOPE_PRIVATE_LIBDIR ${CMAKE_INSTALL_LIBDIR}/attnscope)
install(TARGETS attnscope_core LIBRARY DESTINATION ${ATTNSCOPE_PRIVATE_LIBDIR} COMPONENT app)
if(ATTNSCOPE_CORE_V4)
  install(TARGETS attnscope_core_v4 LIBRARY DESTINATION ${ATTNSCOPE_PRIVATE_LIBDIR}/glibc-hwcaps/x86-64-v4 COMPONENT app)
endif()
file(RELATIVE_PATH bin_to_lib /${CMAKE_INSTALL_BINDIR} /${ATTNSCOPE_PRIVATE_LIBDIR})
install(TARGETS attnscope-cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT app)
set_target_properties(attnscope-cli PROPERTIES INSTALL_RPATH "$ORIGIN/${bin_to_lib}")
if(ATTNSCOPE_BUILD_GUI)
  install(TARGETS attnscope RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT app)
  set_target_properties(attnscope PROPERTIES INSTALL_RPATH "$ORIGIN/${bin_to_lib}")
endif()
# The Python module (`import attnscope`) where Debian's python3 looks, finding the compute library through its
# RUNPATH; built-in models are then found beside python3 (<prefix>/share/attnscope/models for a /usr install).
if(TARGET attnscope_python)
  set(ATTNSCOPE_PYTHON_INSTALL_DIR lib/python3/dist-packages/attnscope)
  install(TARGETS attnscope_python LIBRARY DESTINATION ${ATTNSCOPE_PYTHON_INSTALL_DIR} COMPONENT app)
  install(FILES ${PROJECT_SOURCE_DIR}/python/attnscope/__init__.py DESTINATION ${ATTNSCOPE_PYTHON_INSTALL_DIR} COMPONENT app)
  file(RELATIVE_PATH py_to_lib /${ATTNSCOPE_PYTHON_INSTALL_DIR} /${ATTNSCOPE_PRIVATE_LIBDIR})
  set_target_properties(attnscope_python PROPERTIES INSTALL_RPATH "$ORIGIN/${py_to_lib}")
endif()
# Built-in models live in <prefix>/share/attnscope/models (found relative to the executable).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/resources/models/ DESTINATION ${CMAKE_INSTALL_DATADIR}/attnscope/models
        COMPONENT app PATTERN "training" EXCLUDE)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/attnscope.desktop
        DESTINATION ${CMAKE_INSTALL_DATADIR}/applications RENAME ${ATTNSCOPE_APP_ID}.desktop COMPONENT app)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/attnscope.metainfo.xml
        DESTINATION ${CMAKE_INSTALL_DATADIR}/metainfo RENAME ${ATTNSCOPE_APP_ID}.metainfo.xml COMPONENT app)
install(FILES ${PROJECT_SOURCE_DIR}/resources/icons/attnscope.svg
        DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/scalable/apps RENAME ${ATTNSCOPE_APP_ID}.svg COMPONENT app)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/attnscope.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT app)
# The user guide with its screenshots: Help > User Guide reads it offline from <prefix>/share/doc/attnscope.
install(FILES ${PROJECT_SOURCE_DIR}/docs/user-guide.md ${PROJECT_SOURCE_DIR}/docs/python.md ${PROJECT_SOURCE_DIR}/docs/teaching.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT app)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/images DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT app)

set(CPACK_PACKAGE_NAME attnscope)
set(CPACK_PACKAGE_VENDOR "attnscope developers")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Look inside transformer attention")
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "attnscope developers")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
include(CPack)
